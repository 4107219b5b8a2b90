// The built-in corpora (see corpus.h): joins the string-literal chunks that
// cmake/EmbedCorpus.cmake generated into <build>/zero/<name>_corpus_data.cpp. The
// text is split into chunks because compilers limit the length of one literal
// (MSVC: 16 KiB); adjacent pieces are only ever joined here, at run time.
#include "zero/data/corpus.h"

#include <cstddef>

#include "zero/core/error.h"

// Defined in the generated project_corpus_data.cpp and chinese_corpus_data.cpp.
#define ZERO_DECLARE_CORPUS(name)                  \
  namespace zero::data::detail::name {             \
  extern const char* const kCorpusChunks[];        \
  extern const size_t kCorpusChunkCount;           \
  extern const char* const kCorpusFiles[];         \
  extern const size_t kCorpusFileCount;            \
  }
ZERO_DECLARE_CORPUS(project)
ZERO_DECLARE_CORPUS(chinese)
#undef ZERO_DECLARE_CORPUS

namespace zero::data {
namespace {

std::string join(const char* const* chunks, size_t count) {
  std::string text;
  for (size_t i = 0; i < count; ++i) text += chunks[i];
  return text;
}

}  // namespace

const std::string& default_corpus() {
  static const std::string corpus =
      join(detail::project::kCorpusChunks, detail::project::kCorpusChunkCount);
  return corpus;
}

std::vector<std::string> default_corpus_files() {
  return {detail::project::kCorpusFiles,
          detail::project::kCorpusFiles + detail::project::kCorpusFileCount};
}

const std::string& chinese_corpus() {
  static const std::string corpus =
      join(detail::chinese::kCorpusChunks, detail::chinese::kCorpusChunkCount);
  return corpus;
}

std::vector<std::string> chinese_corpus_files() {
  return {detail::chinese::kCorpusFiles,
          detail::chinese::kCorpusFiles + detail::chinese::kCorpusFileCount};
}

const std::string& builtin_corpus(const std::string& name) {
  if (name == "chinese") return chinese_corpus();
  ZERO_CHECK(name == "project", "unknown built-in corpus \"", name,
             "\": the built-in corpora are project (the project's text and sources) and "
             "chinese (the book's Chinese pages)");
  return default_corpus();
}

}  // namespace zero::data
