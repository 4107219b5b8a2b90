// Fuzz target: data::CharTokenizer::Load (zero/data/char_tokenizer.h), the reader of
// vocab.json. A vocabulary it accepts must save and load back to the same characters,
// and decoding every id then encoding the text must give the ids back.
#include <numeric>

#include "fuzz_support.h"
#include "zero/data/char_tokenizer.h"

using zero::data::CharTokenizer;

void fuzz_one(const uint8_t* data, size_t size) {
  const auto path = (zero_fuzz::work_dir() / "vocab.json").string();
  zero_fuzz::write_bytes(path, data, size);
  const CharTokenizer tok = CharTokenizer::Load(path);

  const auto again = (zero_fuzz::work_dir() / "again.json").string();
  tok.Save(again);
  FUZZ_CHECK(CharTokenizer::Load(again).chars() == tok.chars(), "save/load changed the vocabulary");
  std::vector<int32_t> ids(static_cast<size_t>(tok.vocab_size()));
  std::iota(ids.begin(), ids.end(), 0);
  FUZZ_CHECK(tok.Encode(tok.Decode(ids)) == ids, "encode(decode(ids)) != ids");
}

void write_seeds(zero_fuzz::Seeds& seeds) {
  CharTokenizer::FromText("hello, world\n").Save((seeds.dir() / "small.json").string());
  CharTokenizer::FromText("\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \t\r\n\"\\")
      .Save((seeds.dir() / "unicode.json").string());
  seeds.Add("escapes", R"({"format":"zero-char-vocab","version":1,"chars":["\u0000","\n","\ud83d\ude00"]})");
  seeds.Add("unsorted", R"({"format":"zero-char-vocab","version":1,"chars":["b","a"]})");
  seeds.Add("two_chars", R"({"format":"zero-char-vocab","version":1,"chars":["ab"]})");
  seeds.Add("lone_surrogate", R"({"format":"zero-char-vocab","version":1,"chars":["\ud800"]})");
  seeds.Add("wrong_types", R"({"format":1,"version":"1","chars":{"a":1}})");
  seeds.Add("empty", R"({"format":"zero-char-vocab","version":1,"chars":[]})");
}
