// Certificates made for one test or benchmark run with the openssl command:
// a CA and server certificates it signs for localhost and 127.0.0.1, each
// with a common name of its own, so that a client can tell which one a
// daemon presents. Removed with the object.
#pragma once

#include <string>
#include <vector>

#include "kjit/status.h"

namespace kjit::test {

class TestCertificates {
 public:
  TestCertificates();  // makes the CA ("ca.crt", "ca.key"); status() says whether it worked
  ~TestCertificates();
  TestCertificates(const TestCertificates&) = delete;
  TestCertificates& operator=(const TestCertificates&) = delete;

  const Status& status() const { return status_; }
  // <name>.crt and <name>.key: a key and a server certificate with this
  // common name, signed by the CA.
  Status make_server(const std::string& name, const std::string& common_name);
  std::string file(const std::string& name) const { return dir_ + "/" + name; }
  const std::string& dir() const { return dir_; }

 private:
  Status openssl(std::vector<std::string> args);
  Status status_ = Ok{};
  std::string dir_;
};

}  // namespace kjit::test
