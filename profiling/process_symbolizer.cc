// Another process's pcs named from its mappings and the ELF symbol tables
// of its files, written from the ELF format (elf.h) and perf's documented
// choices of table and alias.
#include "profiling/process_symbolizer.h"

#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "profiling/internal/text.h"

namespace backendlab::profiling {
namespace internal {

// A file mapped read-only, unmapped on destruction.
class MappedFile {
 public:
  static absl::StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0) {
      close(fd);
      return absl::InvalidArgumentError(absl::StrCat(path, ": empty or not a regular file"));
    }
    void* data = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (data == MAP_FAILED) return absl::InternalError(absl::StrCat(path, ": mmap: ", std::strerror(errno)));
    return std::unique_ptr<MappedFile>(new MappedFile(static_cast<const char*>(data), static_cast<size_t>(st.st_size)));
  }
  ~MappedFile() { munmap(const_cast<char*>(data_), size_); }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // `count` objects of T at `offset`, or nullptr if they do not lie in the file.
  template <typename T>
  const T* At(uint64_t offset, uint64_t count = 1) const {
    if (offset > size_ || count > (size_ - offset) / sizeof(T)) return nullptr;
    return reinterpret_cast<const T*>(data_ + offset);
  }
  size_t size() const { return size_; }

 private:
  MappedFile(const char* data, size_t size) : data_(data), size_(size) {}
  const char* data_;
  size_t size_;
};

// The sections and segments of one 64-bit ELF file that symbolizing needs.
class ElfImage {
 public:
  static absl::StatusOr<ElfImage> Open(const std::string& path) {
    absl::StatusOr<std::unique_ptr<MappedFile>> file = MappedFile::Open(path);
    if (!file.ok()) return file.status();
    ElfImage image(std::move(*file));
    const Elf64_Ehdr* header = image.file_->At<Elf64_Ehdr>(0);
    if (header == nullptr || std::memcmp(header->e_ident, ELFMAG, SELFMAG) != 0 ||
        header->e_ident[EI_CLASS] != ELFCLASS64 || header->e_ident[EI_DATA] != ELFDATA2LSB) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": not a 64-bit little-endian ELF file"));
    }
    image.segments_ = image.file_->At<Elf64_Phdr>(header->e_phoff, header->e_phnum);
    image.sections_ = image.file_->At<Elf64_Shdr>(header->e_shoff, header->e_shnum);
    if (image.segments_ != nullptr) image.segment_count_ = header->e_phnum;
    if (image.sections_ != nullptr && header->e_shstrndx < header->e_shnum) {
      image.section_count_ = header->e_shnum;
      image.section_names_ = &image.sections_[header->e_shstrndx];
    }
    return image;
  }

  const Elf64_Shdr* SectionOfType(uint32_t type) const {
    for (size_t i = 0; i < section_count_; ++i) {
      if (sections_[i].sh_type == type) return &sections_[i];
    }
    return nullptr;
  }
  const Elf64_Shdr* SectionNamed(std::string_view name) const {
    for (size_t i = 0; i < section_count_; ++i) {
      if (String(*section_names_, sections_[i].sh_name) == name) return &sections_[i];
    }
    return nullptr;
  }
  const Elf64_Shdr* Section(size_t index) const { return index < section_count_ ? &sections_[index] : nullptr; }

  // The NUL-terminated string at `offset` of string table `table`, "" if out of bounds.
  std::string_view String(const Elf64_Shdr& table, uint64_t offset) const {
    const char* start = file_->At<char>(table.sh_offset + offset);
    if (offset >= table.sh_size || start == nullptr) return {};
    const size_t room = std::min<uint64_t>(table.sh_size - offset, file_->size() - (table.sh_offset + offset));
    return std::string_view(start, strnlen(start, room));
  }

  // The link-time address of file offset `offset`, through the PT_LOAD segment that maps it.
  std::optional<uint64_t> AddressOfOffset(uint64_t offset) const {
    for (size_t i = 0; i < segment_count_; ++i) {
      const Elf64_Phdr& p = segments_[i];
      if (p.p_type == PT_LOAD && offset >= p.p_offset && offset < p.p_offset + p.p_filesz) {
        return p.p_vaddr + (offset - p.p_offset);
      }
    }
    return std::nullopt;
  }

  // The GNU build id in hex, "" without one.
  std::string BuildId() const {
    for (size_t i = 0; i < section_count_; ++i) {
      const Elf64_Shdr& s = sections_[i];
      if (s.sh_type != SHT_NOTE) continue;
      for (uint64_t at = 0; at + sizeof(Elf64_Nhdr) <= s.sh_size;) {
        const Elf64_Nhdr* note = file_->At<Elf64_Nhdr>(s.sh_offset + at);
        if (note == nullptr) break;
        const uint64_t name_at = at + sizeof(Elf64_Nhdr);
        const uint64_t desc_at = name_at + ((note->n_namesz + 3) & ~3u);
        const unsigned char* desc = file_->At<unsigned char>(s.sh_offset + desc_at, note->n_descsz);
        if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && desc != nullptr) {
          std::string hex;
          for (uint32_t b = 0; b < note->n_descsz; ++b) absl::StrAppend(&hex, absl::Hex(desc[b], absl::kZeroPad2));
          return hex;
        }
        at = desc_at + ((note->n_descsz + 3) & ~3u);
      }
    }
    return "";
  }

  // The file name .gnu_debuglink names, "" without one.
  std::string DebugLink() const {
    const Elf64_Shdr* link = SectionNamed(".gnu_debuglink");
    return link != nullptr ? std::string(String(*link, 0)) : "";
  }

  const MappedFile& file() const { return *file_; }

 private:
  explicit ElfImage(std::unique_ptr<MappedFile> file) : file_(std::move(file)) {}
  std::unique_ptr<MappedFile> file_;
  const Elf64_Phdr* segments_ = nullptr;
  size_t segment_count_ = 0;
  const Elf64_Shdr* sections_ = nullptr;
  size_t section_count_ = 0;
  const Elf64_Shdr* section_names_ = nullptr;
};

// One file's function symbols by link-time address.
class ElfFunctions {
 public:
  // The binary's own segments map pcs to addresses; the symbols come from
  // the first table found as the class comment of ProcessSymbolizer says.
  static absl::StatusOr<std::unique_ptr<ElfFunctions>> Read(const std::string& path) {
    absl::StatusOr<ElfImage> binary = ElfImage::Open(path);
    if (!binary.ok()) return binary.status();
    std::unique_ptr<ElfFunctions> functions(new ElfFunctions(std::move(*binary)));
    if (const Elf64_Shdr* symtab = functions->binary_.SectionOfType(SHT_SYMTAB)) {
      functions->AddSymbols(functions->binary_, *symtab);
    } else if (std::optional<ElfImage> debug = functions->DebugFile(path)) {
      functions->AddSymbols(*debug, *debug->SectionOfType(SHT_SYMTAB));
    } else if (const Elf64_Shdr* dynsym = functions->binary_.SectionOfType(SHT_DYNSYM)) {
      functions->AddSymbols(functions->binary_, *dynsym);
    }
    functions->Index();
    return functions;
  }

  std::optional<uint64_t> AddressOfOffset(uint64_t offset) const { return binary_.AddressOfOffset(offset); }

  // The function whose [start, end) holds `address`, or nullptr.
  const std::string* Find(uint64_t address) const {
    auto it = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                               [](uint64_t a, const Symbol& s) { return a < s.start; });
    // A symbol may lie inside a larger one before it: look a few back.
    for (int back = 0; back < 4 && it != symbols_.begin(); ++back) {
      --it;
      if (address < it->end) return &it->name;
    }
    return nullptr;
  }

 private:
  struct Symbol {
    uint64_t start = 0;
    uint64_t end = 0;  // start + size; a zero size extends to the next symbol (Index)
    unsigned char binding = STB_LOCAL;
    std::string name;
  };
  explicit ElfFunctions(ElfImage binary) : binary_(std::move(binary)) {}

  // A separate debug file with a .symtab: by build id, then by debug link.
  std::optional<ElfImage> DebugFile(const std::string& path) const {
    std::vector<std::string> candidates;
    const std::string id = binary_.BuildId();
    if (id.size() > 2) candidates.push_back(absl::StrCat("/usr/lib/debug/.build-id/", id.substr(0, 2), "/", id.substr(2), ".debug"));
    const std::string link = binary_.DebugLink();
    if (!link.empty()) {
      const std::string dir = path.substr(0, path.rfind('/'));
      candidates.push_back(absl::StrCat(dir, "/", link));
      candidates.push_back(absl::StrCat(dir, "/.debug/", link));
      candidates.push_back(absl::StrCat("/usr/lib/debug", dir, "/", link));
    }
    for (const std::string& candidate : candidates) {
      if (candidate == path) continue;
      absl::StatusOr<ElfImage> debug = ElfImage::Open(candidate);
      if (debug.ok() && debug->SectionOfType(SHT_SYMTAB) != nullptr) return std::move(*debug);
    }
    return std::nullopt;
  }

  void AddSymbols(const ElfImage& image, const Elf64_Shdr& table) {
    const Elf64_Shdr* strings = image.Section(table.sh_link);
    if (strings == nullptr || table.sh_entsize != sizeof(Elf64_Sym)) return;
    const Elf64_Sym* syms = image.file().At<Elf64_Sym>(table.sh_offset, table.sh_size / sizeof(Elf64_Sym));
    if (syms == nullptr) return;
    for (uint64_t i = 0; i < table.sh_size / sizeof(Elf64_Sym); ++i) {
      const Elf64_Sym& s = syms[i];
      const unsigned type = ELF64_ST_TYPE(s.st_info);
      if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF || s.st_name == 0 || s.st_value == 0) {
        continue;
      }
      const std::string_view name = image.String(*strings, s.st_name);
      if (name.empty()) continue;
      symbols_.push_back(
          {s.st_value, s.st_value + s.st_size, static_cast<unsigned char>(ELF64_ST_BIND(s.st_info)), std::string(name)});
    }
  }

  static size_t LeadingUnderscores(const std::string& name) {
    const size_t n = name.find_first_not_of('_');
    return n == std::string::npos ? name.size() : n;
  }

  // Of two symbols at one address, whether `a` is the name perf prints:
  // a sized one, then a strong one, a global one, the one with fewer
  // leading underscores, the longer name.
  static bool Better(const Symbol& a, const Symbol& b) {
    const bool a_sized = a.end > a.start, b_sized = b.end > b.start;
    if (a_sized != b_sized) return a_sized;
    if ((a.binding == STB_WEAK) != (b.binding == STB_WEAK)) return b.binding == STB_WEAK;
    if ((a.binding == STB_GLOBAL) != (b.binding == STB_GLOBAL)) return a.binding == STB_GLOBAL;
    if (LeadingUnderscores(a.name) != LeadingUnderscores(b.name)) return LeadingUnderscores(a.name) < LeadingUnderscores(b.name);
    if (a.name.size() != b.name.size()) return a.name.size() > b.name.size();
    return a.name < b.name;  // deterministic
  }

  // Sorts by address, keeps the best name per address, extends zero sizes
  // to the next symbol, and demangles and shortens the names once.
  void Index() {
    std::sort(symbols_.begin(), symbols_.end(), [](const Symbol& a, const Symbol& b) {
      return a.start != b.start ? a.start < b.start : Better(a, b);
    });
    symbols_.erase(std::unique(symbols_.begin(), symbols_.end(),
                               [](const Symbol& a, const Symbol& b) { return a.start == b.start; }),
                   symbols_.end());
    for (size_t i = 0; i < symbols_.size(); ++i) {
      Symbol& s = symbols_[i];
      if (s.end == s.start) s.end = i + 1 < symbols_.size() ? symbols_[i + 1].start : s.start + 1;
      s.name = ShortFunctionName(Demangled(s.name));
    }
  }

  static std::string Demangled(const std::string& name) {
    if (!name.starts_with("_Z")) return name;
    int status = 0;
    char* demangled = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
    if (status != 0 || demangled == nullptr) return name;
    std::string out = demangled;
    std::free(demangled);
    return out;
  }

  ElfImage binary_;
  std::vector<Symbol> symbols_;
};

}  // namespace internal

namespace {

// Splits off the next whitespace-separated field of `line`.
std::string_view NextField(std::string_view& line) {
  line = internal::Trim(line);
  const size_t end = line.find_first_of(" \t");
  const std::string_view field = line.substr(0, end);
  line = end == std::string_view::npos ? std::string_view() : line.substr(end);
  return field;
}

// Hex digits, as /proc/PID/maps writes addresses and offsets.
template <typename T>
bool ParseHex(std::string_view text, T* out) {
  return !text.empty() && absl::SimpleHexAtoi(absl::string_view(text.data(), text.size()), out);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ProcessSymbolizer>> ProcessSymbolizer::FromMaps(std::string_view maps) {
  std::unique_ptr<ProcessSymbolizer> symbolizer(new ProcessSymbolizer());
  size_t line_number = 0;
  while (!maps.empty()) {
    ++line_number;
    std::string_view line = internal::TakeLine(maps);
    if (internal::Trim(line).empty()) continue;
    // "start-end perms offset dev inode [path]"
    const std::string_view range = NextField(line);
    NextField(line);  // perms
    const std::string_view offset = NextField(line);
    NextField(line);  // dev
    NextField(line);  // inode
    std::string path(internal::Trim(line));
    const size_t dash = range.find('-');
    Mapping m;
    if (dash == std::string_view::npos || !ParseHex(range.substr(0, dash), &m.start) ||
        !ParseHex(range.substr(dash + 1), &m.end) || !ParseHex(offset, &m.offset) ||
        m.end <= m.start) {
      return absl::InvalidArgumentError(absl::StrCat("maps line ", line_number, " is not \"start-end perms offset dev inode path\""));
    }
    // A file replaced on disk while mapped: its old name still says where.
    constexpr std::string_view kDeleted = " (deleted)";
    if (path.ends_with(kDeleted)) path.resize(path.size() - kDeleted.size());
    m.path = std::move(path);
    symbolizer->mappings_.push_back(std::move(m));
  }
  std::sort(symbolizer->mappings_.begin(), symbolizer->mappings_.end(),
            [](const Mapping& a, const Mapping& b) { return a.start < b.start; });
  return symbolizer;
}

absl::StatusOr<std::unique_ptr<ProcessSymbolizer>> ProcessSymbolizer::OfProcess(pid_t pid) {
  const std::string path = absl::StrCat("/proc/", pid, "/maps");
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  std::string text;
  int err = fd < 0 ? errno : 0;
  if (fd >= 0) {
    char buf[65536];
    for (;;) {
      const ssize_t n = read(fd, buf, sizeof buf);
      if (n > 0) {
        text.append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        err = n < 0 ? errno : 0;
        break;
      }
    }
    close(fd);
  }
  if (text.empty()) {
    const std::string why = absl::StrCat("cannot read ", path, ": ", err != 0 ? std::strerror(err) : "empty (the process has ended)");
    return err == EACCES || err == EPERM ? absl::PermissionDeniedError(why) : absl::NotFoundError(why);
  }
  return FromMaps(text);
}

ProcessSymbolizer::~ProcessSymbolizer() = default;

std::string ProcessSymbolizer::Resolve(uintptr_t pc) {
  auto it = std::upper_bound(mappings_.begin(), mappings_.end(), pc,
                             [](uintptr_t p, const Mapping& m) { return p < m.start; });
  if (it == mappings_.begin() || pc >= std::prev(it)->end) return "[unknown]";
  const Mapping& m = *std::prev(it);
  if (m.path.empty()) return "[anon]";
  if (m.path.front() == '[') return m.path;
  auto [file, inserted] = files_.try_emplace(m.path);
  if (inserted) {
    absl::StatusOr<std::unique_ptr<internal::ElfFunctions>> read = internal::ElfFunctions::Read(m.path);
    if (read.ok()) {
      file->second = std::move(*read);
    } else {
      unreadable_.push_back(std::string(read.status().message()));
    }
  }
  if (file->second != nullptr) {
    if (const std::optional<uint64_t> address = file->second->AddressOfOffset(pc - m.start + m.offset)) {
      if (const std::string* name = file->second->Find(*address)) return *name;
    }
  }
  return ObjectFrameName(m.path);
}

}  // namespace backendlab::profiling
