/// @file
/// The built-in training corpora: Zero's own chapter text and sources, and the book's
/// Chinese pages.
///
/// So that `train_gpt` runs with no download, the build concatenates project files into
/// generated sources compiled into the library (cmake/EmbedCorpus.cmake), in sorted path
/// order, one blank line between files:
/// - the default corpus: the prose and code (`README.md`, `docs/*.md`,
///   `chapters/*/README.md`, and the `.h`, `.cpp` and `.cu` files under `zero/` and
///   `chapters/`). A model trained on it learns to write C++ and English in the
///   project's style.
/// - the Chinese corpus: every `README.zh.md`, the book in Chinese. Its vocabulary is a
///   few thousand characters instead of about a hundred, which is what chapter 11's
///   Chinese run measures (the embedding and the loss grow with it).
#pragma once

#include <string>
#include <vector>

namespace zero::data {

/// The default corpus embedded at build time, as UTF-8 text. Assembled on first call
/// and cached.
const std::string& default_corpus();

/// The files the default corpus was assembled from, as paths relative to the source
/// tree, in order.
std::vector<std::string> default_corpus_files();

/// The Chinese corpus (every README.zh.md), as UTF-8 text. Assembled on first call and
/// cached.
const std::string& chinese_corpus();

/// The files the Chinese corpus was assembled from, in order.
std::vector<std::string> chinese_corpus_files();

/// The built-in corpus called `name`: "project" (default_corpus) or "chinese"
/// (chinese_corpus), as `train_gpt --corpus` names them.
/// @throws zero::Error naming both for any other name.
const std::string& builtin_corpus(const std::string& name);

}  // namespace zero::data
