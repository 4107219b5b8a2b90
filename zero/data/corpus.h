/// @file
/// The default training corpus: Zero's own chapter text and sources, built in.
///
/// So that `train_gpt` runs with no download, the build concatenates the project's
/// prose and code (`README.md`, `docs/*.md`, `chapters/*/README.md`, and the `.h`,
/// `.cpp` and `.cu` files under `zero/` and `chapters/`, in sorted path order) into a
/// generated source file that is compiled into the library (cmake/EmbedCorpus.cmake).
/// A model trained on it learns to write C++ and English in the project's style.
#pragma once

#include <string>
#include <vector>

namespace zero::data {

/// The corpus embedded at build time, as UTF-8 text. Assembled on first call and cached.
const std::string& default_corpus();

/// The files it was assembled from, as paths relative to the source tree, in order.
std::vector<std::string> default_corpus_files();

}  // namespace zero::data
