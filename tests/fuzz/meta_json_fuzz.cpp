// Fuzz target: data::read_dataset_info (zero/data/token_file.h), the reader of a prepared
// dataset's meta.json. It must accept the file or refuse it with a zero::Error.
#include "fuzz_support.h"
#include "zero/data/token_file.h"

void fuzz_one(const uint8_t* data, size_t size) {
  zero_fuzz::write_bytes(zero_fuzz::work_dir() / "meta.json", data, size);
  const zero::data::DatasetInfo info = zero::data::read_dataset_info(zero_fuzz::work_dir().string());
  FUZZ_CHECK(info.dir == zero_fuzz::work_dir().string(), "the folder is not the one given");
}

void write_seeds(zero_fuzz::Seeds& seeds) {
  const auto dir = seeds.dir() / "prepared";
  zero::data::prepare_char_dataset("First Citizen:\nBefore we proceed any further, hear me speak.\n",
                                   dir.string());
  seeds.Add("valid", zero_fuzz::read_bytes(dir / "meta.json"));
  zero_fuzz::fs::remove_all(dir);
  seeds.Add("wrong_types", R"({"format":7,"version":"one","vocab_size":"65"})");
  seeds.Add("floats", R"({"format":"zero-char-dataset","version":1.0,"vocab_size":6.5e1,)"
                      R"("train_tokens":1e300,"val_tokens":-3})");
  seeds.Add("missing", R"({"format":"zero-char-dataset","version":1})");
  seeds.Add("not_object", R"(["zero-char-dataset",1])");
}
