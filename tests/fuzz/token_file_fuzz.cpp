// Fuzz target: data::load_tokens (zero/data/token_file.h), the reader of train.bin and
// val.bin. The first two input bytes choose vocab_size (little-endian, plus one: 1..65536);
// the rest is the file. What it returns must be exactly the file's uint16 values, each
// below vocab_size.
#include "fuzz_support.h"
#include "zero/data/token_file.h"

void fuzz_one(const uint8_t* data, size_t size) {
  if (size < 2) return;
  const int64_t vocab = 1 + (data[0] | (data[1] << 8));
  const auto path = zero_fuzz::work_dir() / "train.bin";
  zero_fuzz::write_bytes(path, data + 2, size - 2);
  const std::vector<int32_t> ids = zero::data::load_tokens(path.string(), vocab);
  FUZZ_CHECK(ids.size() * 2 == size - 2, "wrong number of tokens");
  for (size_t i = 0; i < ids.size(); ++i) {
    FUZZ_CHECK(ids[i] == (data[2 + 2 * i] | (data[3 + 2 * i] << 8)), "token differs from the file");
    FUZZ_CHECK(ids[i] >= 0 && ids[i] < vocab, "token out of range");
  }
}

void write_seeds(zero_fuzz::Seeds& seeds) {
  const auto dir = seeds.dir() / "prepared";
  const auto info = zero::data::prepare_char_dataset("To be, or not to be, that is the question\n",
                                                     dir.string());
  const auto v = static_cast<uint16_t>(info.vocab_size - 1);
  const std::string prefix{static_cast<char>(v & 0xFF), static_cast<char>(v >> 8)};
  seeds.Add("train", prefix + zero_fuzz::read_bytes(dir / "train.bin"));
  seeds.Add("val", prefix + zero_fuzz::read_bytes(dir / "val.bin"));
  zero_fuzz::fs::remove_all(dir);
  seeds.Add("max_vocab", std::string("\xff\xff\xff\xff\x00\x00", 6));
  seeds.Add("odd_length", std::string("\x03\x00\x01\x00\x02", 5));
  seeds.Add("id_too_big", std::string("\x03\x00\x04\x00", 4));
  seeds.Add("empty_file", std::string("\x03\x00", 2));
}
