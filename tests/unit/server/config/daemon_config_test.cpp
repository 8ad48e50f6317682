// The daemon's TOML configuration: numbers are integers in range, or the
// file is refused naming the key (never converted with overflow or cut).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "server/config/daemon_config.h"
#include "server/config/reapi_headers.h"

namespace kjit {
namespace {

Status load(const std::string& text) {
  DaemonConfig config;
  return load_config_text(text, "test.toml", config);
}

TEST(DaemonConfig, FloatsWhereIntegersAreWantedAreRefused) {
  for (const char* text : {"[cache]\nmemory_bytes = 2684354e56\n", "compile_workers = -1e300\n",
                           "compile_workers = 2.5\n", "[limits]\nmax_input_bytes = 1e300\n",
                           "[limits]\ncompile_memory_bytes = 4.0\n"}) {
    Status s = load(text);
    ASSERT_FALSE(s) << text << " was accepted";
    EXPECT_NE(s.error().message.find("integer"), std::string::npos) << s.error().message;
  }
}

TEST(DaemonConfig, NumbersBeyondTheirFieldAreRefusedNotCut) {
  Status s = load("[limits]\nmax_headers = 4294967297\n");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("limits.max_headers"), std::string::npos) << s.error().message;
  DaemonConfig config;
  ASSERT_TRUE(load_config_text("[limits]\nmax_headers = 4294967295\ncompile_open_files = 64\n", "t", config));
  EXPECT_EQ(config.max_headers, 4294967295u);
  EXPECT_EQ(config.compile_bounds.open_files, 64u);
}

TEST(DaemonConfig, SandboxTakesOnlyItsTwoModes) {
  DaemonConfig config;
  ASSERT_TRUE(load_config_text("sandbox = \"off\"\n", "t", config));
  EXPECT_EQ(config.sandbox, "off");
  Status s = load("sandbox = \"none\"\n");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("sandbox must be"), std::string::npos) << s.error().message;
}

TEST(DaemonConfig, ToolkitPathsAndPolicyAreRead) {
  DaemonConfig config;
  EXPECT_EQ(config.toolkit_policy, ToolkitPolicy::system_first);
  ASSERT_TRUE(load_config_text("toolkit_paths = [\"/opt/venv\", \"/srv/site-packages\"]\ntoolkit_policy = \"newest\"\n",
                               "t", config));
  EXPECT_EQ(config.toolkit_paths, (std::vector<std::string>{"/opt/venv", "/srv/site-packages"}));
  EXPECT_EQ(config.toolkit_policy, ToolkitPolicy::newest);
  Status s = load("toolkit_policy = \"oldest\"\n");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("toolkit_policy must be"), std::string::npos) << s.error().message;
  EXPECT_FALSE(load("toolkit_paths = \"/opt/venv\"\n"));
  EXPECT_FALSE(load("toolkit_policy = 3\n"));
  EXPECT_FALSE(config.local_toolkit_prefix);
  ASSERT_TRUE(load_config_text("local_toolkit_prefix = \"\"\n", "t", config));
  EXPECT_EQ(config.local_toolkit_prefix, std::string{});
}

TEST(DaemonConfig, TransportKeysAreRead) {
  DaemonConfig config;
  ASSERT_TRUE(
      load_config_text("listen = \"0.0.0.0:7878\"\ninsecure_listen = true\n"
                       "tenants = \"/etc/kjit/tenants.toml\"\nsocket_requires_token = true\n"
                       "metrics_port = 9464\nmetrics_address = \"0.0.0.0\"\n"
                       "log_file = \"/var/log/kjitd.log\"\ndrain_timeout_s = 3600\n"
                       "[tls]\ncert = \"/tls/tls.crt\"\nkey = \"/tls/tls.key\"\nclient_ca = \"/tls/ca.crt\"\n"
                       "[admission]\nmax_pending_compiles = 10\nmax_pending_per_tenant = 3\n"
                       "retry_after_ms = 250\n",
                       "t", config))
      << "the documented keys load";
  EXPECT_EQ(config.listen_address, "0.0.0.0:7878");
  EXPECT_TRUE(config.insecure_listen);
  EXPECT_EQ(config.tenants_file, "/etc/kjit/tenants.toml");
  EXPECT_TRUE(config.socket_requires_token);
  EXPECT_EQ(config.metrics_port, 9464);
  EXPECT_EQ(config.metrics_address, "0.0.0.0");
  EXPECT_EQ(config.log_file, "/var/log/kjitd.log");
  EXPECT_EQ(config.drain_timeout_s, 3600u);
  EXPECT_EQ(config.tls.cert_file, "/tls/tls.crt");
  EXPECT_EQ(config.tls.key_file, "/tls/tls.key");
  EXPECT_EQ(config.tls.client_ca_file, "/tls/ca.crt");
  EXPECT_EQ(config.admission.max_pending_compiles, 10u);
  EXPECT_EQ(config.admission.max_pending_per_tenant, 3u);
  EXPECT_EQ(config.admission.retry_after_ms, 250u);
}

TEST(DaemonConfig, DirectReadsAreOnUnlessTurnedOff) {
  DaemonConfig config;
  EXPECT_TRUE(config.cache.direct_reads);
  ASSERT_TRUE(load_config_text("[cache]\ndirect_reads = false\n", "t", config));
  EXPECT_FALSE(config.cache.direct_reads);
  Status s = load("[cache]\ndirect_reads = \"no\"\n");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("cache.direct_reads"), std::string::npos) << s.error().message;
}

TEST(DaemonConfig, TransportKeysOutOfRangeOrMistypedAreRefusedNamingTheKey) {
  struct Case {
    const char* text;
    const char* key;
  };
  for (const Case& c :
       {Case{"metrics_port = 65536\n", "metrics_port"}, Case{"metrics_port = -1\n", "metrics_port"},
        Case{"drain_timeout_s = 0\n", "drain_timeout_s"}, Case{"drain_timeout_s = 3601\n", "drain_timeout_s"},
        Case{"insecure_listen = \"yes\"\n", "insecure_listen"},
        Case{"socket_requires_token = 1\n", "socket_requires_token"}, Case{"tenants = 3\n", "tenants"},
        Case{"[admission]\nmax_pending_compiles = 0\n", "admission.max_pending_compiles"},
        Case{"[admission]\nretry_after_ms = -5\n", "admission.retry_after_ms"},
        Case{"[admission]\nmax_pending_per_tenant = 1.5\n", "admission.max_pending_per_tenant"},
        Case{"[tls]\ncert = 1\n", "tls.cert"}, Case{"tls = \"/x.pem\"\n", "[tls]"},
        Case{"[tls]\ncertificate = \"/x.pem\"\n", "unknown key tls.certificate"},
        Case{"[admission]\nmax_pending = 4\n", "unknown key admission.max_pending"}}) {
    Status s = load(c.text);
    ASSERT_FALSE(s) << c.text << " was accepted";
    EXPECT_NE(s.error().message.find(c.key), std::string::npos) << c.text << ": " << s.error().message;
    EXPECT_NE(s.error().message.find("test.toml"), std::string::npos) << s.error().message;
  }
  DaemonConfig config;
  ASSERT_TRUE(load_config_text("metrics_port = 0\ndrain_timeout_s = 1\n", "t", config));
  EXPECT_EQ(config.metrics_port, 0);
  EXPECT_EQ(config.drain_timeout_s, 1u);
}

}  // namespace
}  // namespace kjit

namespace kjit {
namespace {

TEST(DaemonConfig, BlobSharingNamesGroupsOrUidsAndANamespace) {
  DaemonConfig config;
  ASSERT_TRUE(load_config_text("admin_group = \"kjit-admin\"\n"
                               "[[blob_sharing]]\ngroup = \"ml-team\"\nnamespace = \"ml\"\n"
                               "[[blob_sharing]]\nuids = [1000, 1001]\nnamespace = \"pair\"\n",
                               "t", config));
  EXPECT_EQ(config.admin_group, "kjit-admin");
  ASSERT_EQ(config.blob_sharing.size(), 2u);
  EXPECT_EQ(config.blob_sharing[0].group, "ml-team");
  EXPECT_EQ(config.blob_sharing[0].ns, "ml");
  EXPECT_EQ(config.blob_sharing[1].uids, (std::vector<uint32_t>{1000, 1001}));
  for (const char* bad : {"[[blob_sharing]]\ngroup = \"g\"\n",                       // no namespace
                          "[[blob_sharing]]\nnamespace = \"ns\"\n",                  // nobody
                          "[[blob_sharing]]\nuids = [-1]\nnamespace = \"ns\"\n",     // no user
                          "[[blob_sharing]]\nuids = [1]\nnamespace = \"U1000\"\n",   // a user's own
                          "[[blob_sharing]]\nuids = [1]\nnamespace = \"ns\"\nother = 1\n",
                          "blob_sharing = 3\n"}) {
    DaemonConfig c;
    EXPECT_FALSE(load_config_text(bad, "t", c)) << bad;
  }
}

TEST(DaemonConfig, FleetTargetsAreKnownTargetsNamedOnce) {
  DaemonConfig config;
  ASSERT_TRUE(load_config_text(
      "[fleet]\ntargets = [\"cuda:80\", \"cuda:90\", \"cuda:100\", \"cuda:107\", \"hip:gfx942\"]\n", "t", config));
  std::vector<std::string> names;
  for (const Target& target : config.fleet_targets) names.push_back(target.canonical());
  EXPECT_EQ(names, (std::vector<std::string>{"cuda:80", "cuda:90", "cuda:100", "cuda:107", "hip:gfx942"}));
  EXPECT_TRUE(DaemonConfig{}.fleet_targets.empty());
  const std::pair<const char*, const char*> bad[] = {
      {"[fleet]\ntargets = [\"cuda:nope\"]\n", "fleet.targets: 'cuda:nope'"},
      {"[fleet]\ntargets = [\"cuda:90\", \"sm_90\"]\n", "cuda:90 more than once"},
      {"[fleet]\ntargets = \"cuda:90\"\n", "fleet.targets must be an array of strings"},
      {"[fleet]\ntargets = [90]\n", "fleet.targets must be an array of strings"},
      {"[fleet]\ntarget = [\"cuda:90\"]\n", "unknown key fleet.target"},
      {"fleet = 1\n", "fleet must be a table"},
  };
  for (const auto& [text, message] : bad) {
    DaemonConfig c;
    Status s = load_config_text(text, "t", c);
    ASSERT_FALSE(s) << text;
    EXPECT_NE(s.error().message.find(message), std::string::npos) << s.error().message;
  }
}

TEST(DaemonConfig, TritonPrestartBuildsAreNamesOrStar) {
  DaemonConfig config;
  ASSERT_TRUE(load_config_text("[triton]\nprestart_builds = [\"fbtriton-3.7.4\", \"*\"]\n", "t", config));
  EXPECT_EQ(config.triton_prestart_builds, (std::vector<std::string>{"fbtriton-3.7.4", "*"}));
  EXPECT_TRUE(DaemonConfig{}.triton_prestart_builds.empty());
  const std::pair<const char*, const char*> bad[] = {
      {"[triton]\nprestart_builds = [\"\"]\n", "a build's name is empty"},
      {"[triton]\nprestart_builds = \"*\"\n", "triton.prestart_builds must be an array of strings"},
  };
  for (const auto& [text, message] : bad) {
    DaemonConfig c;
    Status s = load_config_text(text, "t", c);
    ASSERT_FALSE(s) << text;
    EXPECT_NE(s.error().message.find(message), std::string::npos) << s.error().message;
  }
}

// [[triton.plugin]]: a plugin names the builds it is for; a library or a
// package, never both; its variables are its own, never kjit's.
TEST(DaemonConfig, TritonPluginsNameTheirBuilds) {
  DaemonConfig config;
  ASSERT_TRUE(load_config_text(R"([[triton.plugin]]
builds = ["triton-3.9.0"]
library = "/opt/passes/libmy_passes.so"
environment = { MY_PASS_LEVEL = "2" }

[[triton.plugin]]
builds = ["triton-3.8.0"]
package = "triton-utlx"
environment = { UTLX_NO_LAYOUT_PROPAGATION = "1" }
)", "t", config));
  ASSERT_EQ(config.triton_plugin_settings.size(), 2u);
  EXPECT_EQ(config.triton_plugin_settings[0],
            (TritonPluginSetting{{"triton-3.9.0"}, "/opt/passes/libmy_passes.so", "", {{"MY_PASS_LEVEL", "2"}}}));
  EXPECT_EQ(config.triton_plugin_settings[1],
            (TritonPluginSetting{{"triton-3.8.0"}, "", "triton-utlx", {{"UTLX_NO_LAYOUT_PROPAGATION", "1"}}}));
  const std::pair<const char*, const char*> bad[] = {
      {"[[triton.plugin]]\nlibrary = \"/l.so\"\n", "names no builds"},
      {"[[triton.plugin]]\nbuilds = []\nlibrary = \"/l.so\"\n", "names no builds"},
      {"[[triton.plugin]]\nbuilds = [\"\"]\nlibrary = \"/l.so\"\n", "a build's name is empty"},
      {"[[triton.plugin]]\nbuilds = [\"b\"]\n", "takes one of library"},
      {"[[triton.plugin]]\nbuilds = [\"b\"]\nlibrary = \"/l.so\"\npackage = \"p\"\n", "takes one of library"},
      {"[[triton.plugin]]\nbuilds = [\"b\"]\nlibrary = \"l.so\"\n", "is not an absolute path"},
      {"[[triton.plugin]]\nbuilds = [\"b\"]\npackage = \"p\"\nenvironment = { TRITON_PLUGIN_PATHS = \"/x\" }\n",
       "'TRITON_PLUGIN_PATHS' is kjit's to set"},
      {"[[triton.plugin]]\nbuilds = [\"b\"]\npackage = \"p\"\nenvironment = { A = 1 }\n", "environment.A must be a string"},
      {"[[triton.plugin]]\nbuilds = [\"b\"]\npackage = \"p\"\nversion = \"1\"\n", "unknown key [[triton.plugin]] 1 version"},
      {"[triton]\nplugin = \"/l.so\"\n", "array of [[triton.plugin]] tables"},
  };
  for (const auto& [text, message] : bad) {
    DaemonConfig c;
    Status s = load_config_text(text, "t", c);
    ASSERT_FALSE(s) << text;
    EXPECT_NE(s.error().message.find(message), std::string::npos) << s.error().message;
  }
}

TEST(ReapiHeaders, NameValueBecomeLowercaseMetadata) {
  EXPECT_EQ(parse_reapi_header("X-Team: ml-infra"), std::make_pair(std::string("x-team"), std::string("ml-infra")));
  EXPECT_EQ(parse_reapi_header("x-empty:"), std::make_pair(std::string("x-empty"), std::string()));
  for (const char* bad : {"no colon", ": no name", "x-a: b\r\nx-c: d"}) EXPECT_FALSE(parse_reapi_header(bad)) << bad;
}

}  // namespace
}  // namespace kjit
