// mkdtemp-backed test directory (see temp_dir.h).
#include "temp_dir.h"

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>

namespace kjit::test {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "kjit-cache-test-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace kjit::test
