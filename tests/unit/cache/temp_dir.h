// A fresh directory under the system temp dir, removed with everything in it
// when the test ends.
#pragma once

#include <string>

namespace kjit::test {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace kjit::test
