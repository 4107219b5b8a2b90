// Tests of the built-in corpora (data/corpus.h): non-empty, valid UTF-8, assembled from
// the files the build listed, and containing text known to be in them; the Chinese one
// holds every Chinese page and nothing else.
#include "zero/data/corpus.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "tests/data/test_files.h"
#include "zero/data/char_tokenizer.h"
#include "zero/data/utf8.h"

namespace zero::data {
namespace {

TEST(CorpusTest, IsNonEmptyValidUtf8) {
  const std::string& corpus = default_corpus();
  EXPECT_GT(corpus.size(), 10000u);
  EXPECT_NO_THROW(decode_utf8(corpus));
  const CharTokenizer tok = CharTokenizer::FromText(corpus);
  EXPECT_GT(tok.vocab_size(), 50);
  EXPECT_LE(tok.vocab_size(), 65536);  // fits a uint16 token file
}

TEST(CorpusTest, ContainsTheListedFilesInSortedOrder) {
  const std::vector<std::string> files = default_corpus_files();
  ASSERT_FALSE(files.empty());
  EXPECT_TRUE(std::is_sorted(files.begin(), files.end()));
  EXPECT_NE(std::find(files.begin(), files.end(), "zero/data/corpus.h"), files.end());
  if (std::ifstream(std::string(ZERO_SOURCE_DIR) + "/README.md").good()) {
    EXPECT_NE(std::find(files.begin(), files.end(), "README.md"), files.end());
  }
  // A phrase from this corpus' own header, and the first line of every README.md listed.
  EXPECT_NE(default_corpus().find("A model trained on it learns to write C++ and English"),
            std::string::npos);
  for (const std::string& f : files) {
    if (f.size() < 9 || f.compare(f.size() - 9, 9, "README.md") != 0) continue;
    std::ifstream in(std::string(ZERO_SOURCE_DIR) + "/" + f);
    std::string first_line;
    std::getline(in, first_line);
    ASSERT_FALSE(first_line.empty()) << f;
    EXPECT_NE(default_corpus().find(first_line), std::string::npos) << f << ": " << first_line;
  }
}

TEST(CorpusTest, TheChineseCorpusIsEveryChinesePageInOrder) {
  const std::vector<std::string> files = chinese_corpus_files();
  ASSERT_FALSE(files.empty());
  EXPECT_TRUE(std::is_sorted(files.begin(), files.end()));
  EXPECT_NE(std::find(files.begin(), files.end(), "chapters/11_gpt/README.zh.md"), files.end());
  const std::string& text = chinese_corpus();
  EXPECT_NO_THROW(decode_utf8(text));
  size_t offset = 0;
  for (const std::string& f : files) {
    EXPECT_EQ(f.compare(f.size() - 12, 12, "README.zh.md"), 0) << f;
    // The files in order, each followed by one blank line: the whole text, byte for byte.
    std::ifstream in(std::string(ZERO_SOURCE_DIR) + "/" + f, std::ios::binary);
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (content.empty() || content.back() != '\n') content += '\n';
    content += '\n';
    ASSERT_EQ(text.compare(offset, content.size(), content), 0) << f << " at byte " << offset;
    offset += content.size();
  }
  EXPECT_EQ(offset, text.size());
  // Thousands of characters, most of them Chinese (the series' terms among them).
  const CharTokenizer tok = CharTokenizer::FromText(text);
  EXPECT_GT(tok.vocab_size(), 1000);
  EXPECT_NE(text.find("张量"), std::string::npos);
  EXPECT_NE(text.find("算子"), std::string::npos);
}

}  // namespace
}  // namespace zero::data
