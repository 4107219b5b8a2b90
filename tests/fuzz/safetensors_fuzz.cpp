// Fuzz target: io::load_safetensors (zero/io/safetensors.h) on arbitrary file contents.
// A file it accepts must survive a round trip: saved again by save_safetensors and
// loaded back, it gives the same names, dtypes, shapes, bytes and metadata.
#include <cstring>

#include "fuzz_support.h"
#include "zero/io/safetensors.h"

namespace {

using zero::Tensor;
using zero::io::NamedTensors;
using Metadata = std::map<std::string, std::string>;

bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  const size_t bytes = static_cast<size_t>(a.numel()) * zero::dtype_size(a.dtype());
  return bytes == 0 || std::memcmp(a.data(), b.data(), bytes) == 0;
}

// The bytes of a safetensors file with `header` as its JSON and `data` after it.
std::string file_of(std::string header, const std::string& data) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(n >> (8 * i));
  return out + header + data;
}

}  // namespace

void fuzz_one(const uint8_t* data, size_t size) {
  const auto path = (zero_fuzz::work_dir() / "in.safetensors").string();
  zero_fuzz::write_bytes(path, data, size);
  Metadata meta;
  const NamedTensors loaded = zero::io::load_safetensors(path, &meta);

  const auto again = (zero_fuzz::work_dir() / "again.safetensors").string();
  zero::io::save_safetensors(again, loaded, meta);
  Metadata meta2;
  const NamedTensors reloaded = zero::io::load_safetensors(again, &meta2);
  FUZZ_CHECK(meta2 == meta, "metadata changed in a save/load round trip");
  FUZZ_CHECK(reloaded.size() == loaded.size(), "tensor count changed in a round trip");
  for (size_t i = 0; i < loaded.size(); ++i) {
    FUZZ_CHECK(reloaded[i].first == loaded[i].first, "tensor order changed: " + loaded[i].first);
    FUZZ_CHECK(same_tensor(reloaded[i].second, loaded[i].second),
               "tensor changed in a round trip: " + loaded[i].first);
  }
}

void write_seeds(zero_fuzz::Seeds& seeds) {
  const auto p = [&](const char* name) { return (seeds.dir() / name).string(); };
  zero::io::save_safetensors(p("two_tensors"),
                             {{"w", Tensor::From({1.0f, -2.0f, 3.5f, 0.0f, 5.0f, 6.0f}, {2, 3})},
                              {"ids", Tensor::FromI32({7, -1, 65535}, {3})}},
                             {{"format", "zero-gpt"}, {"step", "12"}});
  zero::io::save_safetensors(p("scalar_and_empty"),
                             {{"s", Tensor::From({42.0f}, {})},
                              {"e", Tensor::From({}, {0, 4})}});
  zero::io::save_safetensors(p("no_tensors"), {}, {{"only", "metadata"}});
  // Edge cases by hand: a header padded with spaces, and ones each loader check rejects.
  seeds.Add("padded", file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}   )",
                              std::string(4, '\0')));
  seeds.Add("overlap", file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                               R"("b":{"dtype":"I32","shape":[1],"data_offsets":[2,6]}})",
                               std::string(8, '\x01')));
  seeds.Add("huge_shape", file_of(R"({"a":{"dtype":"F32","shape":[0,1099511627776,1099511627776],)"
                                  R"("data_offsets":[0,0]}})", ""));
  seeds.Add("bad_dtype", file_of(R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})",
                                 std::string(4, '\0')));
  seeds.Add("header_too_long", std::string("\xff\xff\xff\xff\x00\x00\x00\x00{}", 10));
}

