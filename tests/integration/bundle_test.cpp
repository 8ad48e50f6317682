// Cache bundles through real daemons and the kjit CLI: what one daemon
// compiled, exported and imported into a fresh daemon with an empty cache,
// is a hit there; importing again keeps what is there and says so; a bundle
// of another entry format, of a toolkit the daemon lacks, or damaged, is
// refused with the status that says which; a tenant exports and imports its
// own namespace alone, and its share of the tiers still bounds it.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cache/cache_bundle.h"
#include "kjit/client.h"
#include "pipeline/cache_key.h"
#include "sample_entries.h"
#include "support/cuda_kernels.h"
#include "support/daemon_test.h"
#include "temp_dir.h"

namespace kjit::test {
namespace {

CompileRequest kernel_request(int i, const std::string& target = "cuda:90") {
  CompileRequest request;
  request.input = std::string(k_vector_add) + "\n// bundle test kernel " + std::to_string(i) + "\n";
  request.input_name = "bundle_" + std::to_string(i) + ".cu";
  request.target = target;
  return request;
}

Result<std::string> export_to_string(const Client& client, const BundleExportOptions& options = {},
                                     BundleExportResult* summary = nullptr) {
  std::string out;
  Result<BundleExportResult> exported = client.export_bundle(options, [&](std::string_view bytes) -> Status {
    out.append(bytes);
    return Ok{};
  });
  if (!exported) return exported.error();
  if (summary) *summary = *exported;
  EXPECT_EQ(exported->bytes, out.size());
  return out;
}

Result<BundleImportResult> import_string(const Client& client, const std::string& bundle, const std::string& ns = {}) {
  size_t at = 0;
  return client.import_bundle(ns, [&](char* buffer, size_t capacity) -> Result<size_t> {
    const size_t n = std::min(capacity, bundle.size() - at);
    std::copy_n(bundle.data() + at, n, buffer);
    at += n;
    return n;
  });
}

uint64_t skipped_for(const BundleImportResult& result, std::string_view reason) {
  for (const BundleImportSkip& skip : result.skips)
    if (skip.reason == reason) return skip.count;
  return 0;
}

CommandResult kjit_cli(std::vector<std::string> args, const TestDaemon& daemon) {
  args.insert(args.begin(), kjit_cli_path());
  args.push_back("--socket");
  args.push_back(daemon.socket_path());
  return run_command(args);
}

TEST(Bundles, WhatOneDaemonCompiledIsAHitInAFreshOne) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  TempDir temp;
  TestDaemon first({"--cache-dir", temp.path() + "/first"});
  Client a(first.socket_path());
  constexpr int k_kernels = 3;
  for (int i = 0; i < k_kernels; ++i) {
    Result<CompileResult> compiled = a.compile(kernel_request(i));
    ASSERT_TRUE(compiled) << compiled.error().message;
    EXPECT_EQ(compiled->cache, "compiled");
  }
  ASSERT_TRUE(a.put_blob("triton", "k0", "kernel.cubin", std::string("\0blob bytes", 11)));

  // Through the CLI, to a file, as an operator would.
  const std::string file = temp.path() + "/cache.kjb";
  CommandResult exported = kjit_cli({"cache", "export", "-o", file, "--json"}, first);
  ASSERT_EQ(exported.exit_code, 0) << exported.out << exported.err;
  const nlohmann::json summary = nlohmann::json::parse(exported.out);
  EXPECT_EQ(summary["entries"], k_kernels);
  EXPECT_EQ(summary["blobs"], 1);
  EXPECT_EQ(summary["recipes"], k_kernels);

  TestDaemon second({"--cache-dir", temp.path() + "/second"});
  CommandResult imported = kjit_cli({"cache", "import", file, "--json"}, second);
  ASSERT_EQ(imported.exit_code, 0) << imported.out << imported.err;
  const nlohmann::json report = nlohmann::json::parse(imported.out);
  EXPECT_EQ(report["entries_imported"], k_kernels);
  EXPECT_EQ(report["blobs_imported"], 1);
  EXPECT_EQ(report["recipes_imported"], k_kernels);
  EXPECT_EQ(report["skipped"], 0);
  EXPECT_EQ(report["entry_format"], k_entry_format_version);

  Client b(second.socket_path());
  for (int i = 0; i < k_kernels; ++i) {
    Result<CompileResult> again = b.compile(kernel_request(i));
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_NE(again->cache, "compiled") << "kernel " << i << " was compiled again after the import";
  }
  Result<std::optional<std::string>> blob = b.get_blob("triton", "k0", "kernel.cubin");
  ASSERT_TRUE(blob);
  ASSERT_TRUE(blob->has_value());
  EXPECT_EQ(**blob, std::string("\0blob bytes", 11));
  Result<std::vector<RecipeSummary>> recipes = b.list_recipes();
  ASSERT_TRUE(recipes);
  EXPECT_EQ(recipes->size(), static_cast<size_t>(k_kernels));

  // Again: everything is there, and stays.
  Result<std::string> bundle = export_to_string(a);
  ASSERT_TRUE(bundle) << bundle.error().message;
  Result<BundleImportResult> twice = import_string(b, *bundle);
  ASSERT_TRUE(twice) << twice.error().message;
  EXPECT_EQ(twice->entries_imported + twice->blobs_imported + twice->recipes_imported, 0u);
  EXPECT_EQ(skipped_for(*twice, "already there (kept)"), static_cast<uint64_t>(k_kernels + 1));
  EXPECT_EQ(skipped_for(*twice, "recipe already there (kept)"), static_cast<uint64_t>(k_kernels));
  EXPECT_EQ(twice->skipped, static_cast<uint64_t>(2 * k_kernels + 1));

  // A target filter: the compile entries of that target alone, no blobs.
  BundleExportResult other_target;
  Result<std::string> filtered = export_to_string(a, {.targets = {"cuda:80"}}, &other_target);
  ASSERT_TRUE(filtered) << filtered.error().message;
  EXPECT_EQ(other_target.entries + other_target.blobs, 0u);
  EXPECT_EQ(other_target.recipes, static_cast<uint64_t>(k_kernels));
  BundleExportResult recipes_only;
  ASSERT_TRUE(export_to_string(a, {.recipes_only = true}, &recipes_only));
  EXPECT_EQ(recipes_only.entries + recipes_only.blobs, 0u);
  EXPECT_EQ(recipes_only.recipes, static_cast<uint64_t>(k_kernels));
  Result<std::string> bad_target = export_to_string(a, {.targets = {"cuda:nine"}});
  ASSERT_FALSE(bad_target);
  EXPECT_EQ(bad_target.error().code, ErrorCode::invalid_argument) << bad_target.error().message;
}

TEST(Bundles, ForeignOrDamagedBundlesAreRefusedCleanly) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  TempDir temp;
  TestDaemon daemon({"--cache-dir", temp.path() + "/cache"});
  Client client(daemon.socket_path());
  ASSERT_TRUE(client.compile(kernel_request(10)));
  Result<std::string> bundle = export_to_string(client);
  ASSERT_TRUE(bundle) << bundle.error().message;

  TestDaemon fresh({"--cache-dir", temp.path() + "/fresh"});
  Client empty(fresh.socket_path());
  // Another entry format: refused before any record, naming both.
  std::string forged = *bundle;
  forged[12] = static_cast<char>(k_entry_format_version - 1);
  Result<BundleImportResult> refused = import_string(empty, forged);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::failed_precondition);
  EXPECT_NE(refused.error().message.find("bundle entry format " + std::to_string(k_entry_format_version - 1) +
                                         ", this daemon " + std::to_string(k_entry_format_version)),
            std::string::npos)
      << refused.error().message;

  // Built with a toolkit this daemon does not have.
  std::string foreign;
  BundleWriter writer([&](std::string_view bytes) -> Status {
    foreign.append(bytes);
    return Ok{};
  });
  BundleManifest manifest;
  manifest.toolchains = {"toolchain.nvrtc 9.9"};
  ASSERT_TRUE(writer.begin(manifest));
  ASSERT_TRUE(writer.finish());
  Result<BundleImportResult> no_toolkit = import_string(empty, foreign);
  ASSERT_FALSE(no_toolkit);
  EXPECT_EQ(no_toolkit.error().code, ErrorCode::failed_precondition);
  EXPECT_NE(no_toolkit.error().message.find("CUDA 9.9"), std::string::npos) << no_toolkit.error().message;

  // Well formed, checksums right, but an entry whose key is not what its
  // contents derive: skipped, and said why.
  std::string forged_key;
  BundleWriter forger([&](std::string_view bytes) -> Status {
    forged_key.append(bytes);
    return Ok{};
  });
  ASSERT_TRUE(forger.begin(BundleManifest{}));
  ASSERT_TRUE(forger.add_entry(make_entry(key_for(7), "not what this key compiles to")));
  ASSERT_TRUE(forger.finish());
  Result<BundleImportResult> skipped = import_string(empty, forged_key);
  ASSERT_TRUE(skipped) << skipped.error().message;
  EXPECT_EQ(skipped->entries_imported, 0u);
  EXPECT_EQ(skipped_for(*skipped, "its key is not the digest of its key components"), 1u);

  // Damaged: a flipped byte in the entry, something else entirely. Nothing
  // of them reaches the tiers, and the daemon serves on.
  std::string flipped = *bundle;
  flipped[flipped.size() / 2] ^= 0x10;
  for (const std::string& bad : {flipped, std::string("#!/bin/sh\n")}) {
    Result<BundleImportResult> damaged = import_string(empty, bad);
    ASSERT_FALSE(damaged);
    EXPECT_EQ(damaged.error().code, ErrorCode::invalid_argument) << damaged.error().message;
  }
  Result<CompileResult> after = empty.compile(kernel_request(10));
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(after->cache, "compiled");

  // Cut inside its end record: refused as truncated; the records before
  // the cut were each whole and verified, and the error says they stay.
  TestDaemon third({"--cache-dir", temp.path() + "/third"});
  Result<BundleImportResult> cut = import_string(Client(third.socket_path()), bundle->substr(0, bundle->size() - 7));
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.error().code, ErrorCode::invalid_argument) << cut.error().message;
  EXPECT_NE(cut.error().message.find("truncated bundle"), std::string::npos) << cut.error().message;
  EXPECT_NE(cut.error().message.find("1 entries, 0 blobs and 1 recipes imported before it"), std::string::npos)
      << cut.error().message;
}

TEST(Bundles, ATenantExportsAndImportsItsOwnNamespace) {
  KJIT_SKIP_WITHOUT_TOOLKIT();
  TempDir temp;
  const std::string tenants = temp.path() + "/tenants.toml";
  std::ofstream(tenants) << "[[tenants]]\nname = \"alpha\"\ntoken_sha256 = \"" << sha256_hex("alpha-token")
                         << "\"\n[[tenants]]\nname = \"beta\"\ntoken_sha256 = \"" << sha256_hex("beta-token")
                         << "\"\n[[tenants]]\nname = \"small\"\ntoken_sha256 = \"" << sha256_hex("small-token")
                         << "\"\nmax_bytes = 1024\n";
  TestDaemon daemon({"--tenants", tenants, "--cache-dir", temp.path() + "/cache"});
  auto as = [&](const std::string& token) {
    ClientOptions options;
    options.token = token;
    return Client(daemon.socket_path(), options);
  };
  const Client alpha = as("alpha-token"), beta = as("beta-token"), small = as("small-token");
  const Client operator_client(daemon.socket_path());
  ASSERT_TRUE(alpha.compile(kernel_request(20)));
  ASSERT_TRUE(beta.compile(kernel_request(21)));
  ASSERT_TRUE(beta.compile(kernel_request(22)));

  BundleExportResult alpha_summary;
  Result<std::string> alpha_bundle = export_to_string(alpha, {}, &alpha_summary);
  ASSERT_TRUE(alpha_bundle) << alpha_bundle.error().message;
  EXPECT_EQ(alpha_summary.entries, 1u) << "a tenant's bundle holds its own namespace's entries alone";

  Result<std::string> other = export_to_string(alpha, {.ns = "beta"});
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code, ErrorCode::permission_denied) << other.error().message;
  Result<BundleImportResult> into_other = import_string(alpha, *alpha_bundle, "beta");
  ASSERT_FALSE(into_other);
  EXPECT_EQ(into_other.error().code, ErrorCode::permission_denied) << into_other.error().message;

  // The operator names any namespace.
  BundleExportResult beta_summary;
  ASSERT_TRUE(export_to_string(operator_client, {.ns = "beta"}, &beta_summary));
  EXPECT_EQ(beta_summary.entries, 2u);

  // Into beta's namespace: alpha's kernel is a hit for beta after it.
  Result<BundleImportResult> imported = import_string(beta, *alpha_bundle);
  ASSERT_TRUE(imported) << imported.error().message;
  EXPECT_EQ(imported->entries_imported, 1u);
  EXPECT_EQ(imported->ns, "beta");
  Result<CompileResult> hit = beta.compile(kernel_request(20));
  ASSERT_TRUE(hit) << hit.error().message;
  EXPECT_NE(hit->cache, "compiled");

  // A share of 1 KiB holds no cubin: skipped, and said why.
  Result<BundleImportResult> bounded = import_string(small, *alpha_bundle);
  ASSERT_TRUE(bounded) << bounded.error().message;
  EXPECT_EQ(bounded->entries_imported, 0u);
  EXPECT_EQ(skipped_for(*bounded, "over the namespace's share of the tiers (max_bytes 1024)"), 1u);
}

}  // namespace
}  // namespace kjit::test
