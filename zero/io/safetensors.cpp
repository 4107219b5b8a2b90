// save_safetensors / load_safetensors (see safetensors.h). The header is JSON, read and
// written with nlohmann-json; the data section is copied byte for byte, which assumes a
// little-endian host (every machine Zero targets: x86-64 and AArch64), checked below.
// The loader validates the whole header before it allocates a tensor, so a corrupt or
// hostile file produces a message, never a crash or a huge allocation.
#include "zero/io/safetensors.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "zero/core/error.h"
#include "zero/io/atomic_file.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian; this loader copies it as is");

namespace zero::io {
namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference library's limit (not 100 MiB)
constexpr const char* kMetadataKey = "__metadata__";
constexpr uint64_t kMaxElements = 1ull << 40;  // per tensor: 4 TiB of F32, beyond any real file

// The safetensors names of Zero's dtypes, in the order of DataType.
constexpr const char* kDtypeNames[] = {"F32", "I32", "BF16", "F16"};

const char* dtype_name(DataType dtype) { return kDtypeNames[static_cast<int>(dtype)]; }

struct Entry {  // one tensor of the header, validated
  std::string name;
  DataType dtype;
  Shape shape;
  uint64_t begin, end;
};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(detail::str_cat("safetensors file '", path, "': ", what));
}

// Reads `bytes` at `offset` into `dst`; a short read means the file changed under us.
void read_at(std::ifstream& in, const std::string& path, uint64_t offset, void* dst,
             uint64_t bytes) {
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(static_cast<char*>(dst), static_cast<std::streamsize>(bytes));
  if (!in) fail(path, detail::str_cat("cannot read ", bytes, " bytes at offset ", offset));
}

Entry parse_entry(const std::string& path, const std::string& name, const nlohmann::json& j) {
  const std::string where = "tensor '" + name + "'";
  if (!j.is_object()) fail(path, where + ": expected an object, got " + j.dump());
  if (!j.contains("dtype") || !j["dtype"].is_string()) fail(path, where + ": no \"dtype\" string");
  const std::string dtype = j["dtype"].get<std::string>();
  Entry e{name, DataType::F32, {}, 0, 0};
  bool known = false;
  for (DataType d : {DataType::F32, DataType::I32, DataType::BF16, DataType::F16}) {
    if (dtype == dtype_name(d)) e.dtype = d, known = true;
  }
  if (!known) {
    fail(path, where + ": unknown or unsupported dtype \"" + dtype +
                   "\" (Zero reads F32, I32, BF16 and F16)");
  }
  if (!j.contains("shape") || !j["shape"].is_array()) fail(path, where + ": no \"shape\" array");
  // The cap bounds the product of max(size, 1), not only the element count: a size-0
  // dimension makes numel 0 while the strides of [0, 2^40, 2^40, 2^40] still overflow.
  uint64_t numel = 1, span = 1;
  for (const auto& d : j["shape"]) {
    if (!d.is_number_unsigned())
      fail(path, where + ": shape entries must be non-negative integers, got " + d.dump());
    const uint64_t size = d.get<uint64_t>();
    const uint64_t extent = std::max<uint64_t>(size, 1);
    if (size > kMaxElements || span > kMaxElements / extent) {
      fail(path, where + ": shape " + j["shape"].dump() + " is implausibly large (more than 2^40 "
                 "elements, counting a size-0 dimension as 1)");
    }
    numel *= size;
    span *= extent;
    e.shape.push_back(static_cast<int64_t>(size));
  }
  const auto& offsets = j.value("data_offsets", nlohmann::json());
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    fail(path, where + ": expected \"data_offsets\": [begin, end] of non-negative integers");
  }
  e.begin = offsets[0].get<uint64_t>();
  e.end = offsets[1].get<uint64_t>();
  if (e.end < e.begin)
    fail(path, where + ": data_offsets " + offsets.dump() + " end before they begin");
  const uint64_t bytes = numel * dtype_size(e.dtype);
  if (e.end - e.begin != bytes) {
    fail(path,
         detail::str_cat(where, ": shape ", j["shape"].dump(), " of ", dtype, " needs ", bytes,
                         " bytes, but data_offsets ", offsets.dump(), " span ", e.end - e.begin));
  }
  return e;
}

// The header by the format's rules, which the reference library enforces: a JSON object
// that starts with '{', padded at the end with spaces (0x20) only, and no key twice in any
// object. nlohmann-json alone would stop at a NUL byte (ignoring what follows), accept
// any JSON whitespace as padding and keep the last of two equal keys.
nlohmann::json parse_header(const std::string& path, const std::string& text) {
  if (text.empty() || text[0] != '{')
    fail(path, "the header does not start with '{' (not safetensors?)");
  const size_t nul = text.find('\0');
  if (nul != std::string::npos) {
    fail(path, detail::str_cat("the header has a NUL byte at offset ", nul,
                               "; it must be JSON padded with spaces only"));
  }
  const size_t last = text.find_last_not_of(' ');
  std::vector<std::set<std::string>> keys;  // those seen in each object being parsed
  auto no_duplicates = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start) keys.emplace_back();
    if (event == Event::object_end) keys.pop_back();
    if (event == Event::key && !keys.back().insert(parsed.get<std::string>()).second) {
      fail(path, "the key \"" + parsed.get<std::string>() + "\" appears twice in one object of "
                 "the header (duplicate keys are not allowed)");
    }
    return true;
  };
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text.begin(), text.begin() + last + 1, no_duplicates);
  } catch (const nlohmann::json::exception& e) {
    fail(path, std::string("the header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) fail(path, "the header is not a JSON object");
  if (text[last] != '}') {  // valid JSON, so what follows the object is other whitespace
    fail(path, detail::str_cat("the header is padded with byte ", static_cast<int>(text[last]),
                               " at offset ", last, "; only spaces (0x20) may pad it"));
  }
  return header;
}

}  // namespace

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  std::vector<Tensor> cpu;  // contiguous CPU copies, in order
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    ZERO_CHECK(!name.empty() && name != kMetadataKey,
               "expected tensor names that are non-empty and not \"", kMetadataKey, "\", got \"",
               name, "\" for '", path, "'");
    ZERO_CHECK(names.insert(name).second, "tensor name \"", name,
               "\" appears twice in what is saved to '", path, "'");
    ZERO_CHECK(tensor.defined(), "tensor \"", name, "\" saved to '", path, "' is undefined");
    Tensor t = tensor.Detach().Contiguous().Cpu();
    const uint64_t bytes = static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype());
    header[name] = {{"dtype", dtype_name(t.dtype())},
                    {"shape", t.sizes()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    cpu.push_back(std::move(t));
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');  // 8-byte alignment of the data section
  unsigned char length[8];
  for (int i = 0; i < 8; ++i)
    length[i] = static_cast<unsigned char>(static_cast<uint64_t>(json.size()) >> (8 * i));

  AtomicFile file(path);
  file.Write(length, 8);
  file.Write(json.data(), json.size());
  for (const Tensor& t : cpu) {
    if (t.numel() > 0) file.Write(t.data(), static_cast<size_t>(t.numel()) * dtype_size(t.dtype()));
  }
  file.Commit();
}

NamedTensors load_safetensors(const std::string& path,
                              std::map<std::string, std::string>* metadata) {
  std::error_code ec;
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  if (ec) fail(path, "cannot read it: " + ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open it for reading");
  if (file_size < 8)
    fail(path,
         detail::str_cat("only ", file_size, " bytes, too short for the 8-byte header length"));

  unsigned char length_bytes[8];
  read_at(in, path, 0, length_bytes, 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | length_bytes[i];
  if (n > file_size - 8) {
    fail(path, detail::str_cat("header length ", n, " runs past the end of the file (", file_size,
                               " bytes); the file is truncated or not safetensors"));
  }
  if (n > kMaxHeaderBytes)
    fail(path, detail::str_cat("header length ", n, " exceeds the limit of ", kMaxHeaderBytes,
                               " bytes (the reference library's)"));
  std::string text(n, '\0');
  read_at(in, path, 8, text.data(), n);
  const nlohmann::json header = parse_header(path, text);

  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey) {
      if (!value.is_object()) fail(path, "\"__metadata__\" must be an object of strings");
      for (const auto& [key, v] : value.items()) {
        if (!v.is_string())
          fail(path, "metadata \"" + key + "\" must be a string, got " + v.dump());
        if (metadata) (*metadata)[key] = v.get<std::string>();
      }
      continue;
    }
    if (name.empty()) fail(path, "a tensor has an empty name");  // save_safetensors refuses one
    entries.push_back(parse_entry(path, name, value));
  }

  // The tensors must tile the data section exactly, as the reference library requires.
  const uint64_t data_size = file_size - 8 - n;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t expected = 0;
  for (const Entry& e : entries) {
    if (e.end > data_size) {
      fail(path, detail::str_cat("tensor '", e.name, "' data_offsets [", e.begin, ", ", e.end,
                                 "] lie beyond the data section (", data_size,
                                 " bytes); is the file truncated?"));
    }
    if (e.begin < expected) {
      fail(path, detail::str_cat("tensor '", e.name, "' data_offsets [", e.begin, ", ", e.end,
                                 "] overlap the previous tensor, which ends at ", expected));
    }
    if (e.begin > expected) {
      fail(path, detail::str_cat("gap of ", e.begin - expected, " bytes before tensor '", e.name,
                                 "' (offset ", expected, " to ", e.begin, ")"));
    }
    expected = e.end;
  }
  if (expected != data_size) {
    fail(path,
         detail::str_cat(data_size - expected, " bytes of unexpected data after the last tensor (",
                         "the data section has ", data_size, " bytes, the tensors cover ", expected,
                         ")"));
  }

  NamedTensors out;
  out.reserve(entries.size());
  for (const Entry& e : entries) {
    Tensor t = Tensor::Empty(e.shape, TensorOption().WithDtype(e.dtype));
    if (e.end > e.begin) read_at(in, path, 8 + n + e.begin, t.data(), e.end - e.begin);
    out.emplace_back(e.name, std::move(t));
  }
  return out;
}

}  // namespace zero::io
