// default_corpus() (see corpus.h): joins the string-literal chunks that
// cmake/EmbedCorpus.cmake generated into <build>/zero/default_corpus_data.cpp. The
// text is split into chunks because compilers limit the length of one literal
// (MSVC: 16 KiB); adjacent pieces are only ever joined here, at run time.
#include "zero/data/corpus.h"

#include <cstddef>

namespace zero::data {
namespace detail {
// Defined in the generated default_corpus_data.cpp.
extern const char* const kCorpusChunks[];
extern const size_t kCorpusChunkCount;
extern const char* const kCorpusFiles[];
extern const size_t kCorpusFileCount;
}  // namespace detail

const std::string& default_corpus() {
  static const std::string corpus = [] {
    std::string text;
    for (size_t i = 0; i < detail::kCorpusChunkCount; ++i) text += detail::kCorpusChunks[i];
    return text;
  }();
  return corpus;
}

std::vector<std::string> default_corpus_files() {
  return std::vector<std::string>(detail::kCorpusFiles,
                                  detail::kCorpusFiles + detail::kCorpusFileCount);
}

}  // namespace zero::data
