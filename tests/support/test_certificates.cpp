#include "support/test_certificates.h"

#include <filesystem>
#include <fstream>
#include <vector>

#include "support/child_process.h"

namespace kjit::test {

TestCertificates::TestCertificates() {
  Result<std::string> dir = make_temp_dir("kjit-certs-");
  if (!dir) {
    status_ = dir.error();
    return;
  }
  dir_ = *dir;
  std::ofstream(file("server.ext")) << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
  status_ = openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days",
                     "1", "-subj", "/CN=kjit test CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
                     "keyUsage=critical,keyCertSign,cRLSign", "-keyout", file("ca.key"), "-out", file("ca.crt")});
}

TestCertificates::~TestCertificates() {
  std::error_code ignored;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
}

Status TestCertificates::openssl(std::vector<std::string> args) {
  args.insert(args.begin(), {"/usr/bin/env", "openssl"});  // from PATH
  CommandResult r = run_command(args);
  if (r.exit_code != 0) return make_error(ErrorCode::internal, "openssl " + args[2] + ": " + r.err);
  return Ok{};
}

Status TestCertificates::make_server(const std::string& name, const std::string& common_name) {
  if (Status s = openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj",
                          "/CN=" + common_name, "-keyout", file(name + ".key"), "-out", file(name + ".csr")});
      !s)
    return s;
  return openssl({"x509", "-req", "-in", file(name + ".csr"), "-CA", file("ca.crt"), "-CAkey", file("ca.key"),
                  "-CAcreateserial", "-days", "1", "-extfile", file("server.ext"), "-out", file(name + ".crt")});
}

}  // namespace kjit::test
