// How a kjit cache entry lives in a REAPI store, so that any REAPI server
// keeps it and any kjitd finds it again:
//
//   Command { arguments: ["kjit-cache-entry", "v<entry format>", <stored key>],
//             output_paths: ["kjit-entry"] }
//   Action  { command_digest: digest(Command), input_root_digest: digest(""),
//             salt: "kjit" }
//   ActionCache[digest(Action)] = ActionResult { output_files: [
//             { path: "kjit-entry", digest: digest(entry bytes) }] }
//   CAS[digest(entry bytes)]    = the entry as the disk tier writes it
//
// Messages are serialized deterministically, so every daemon derives the
// same Action digest for a key; the stored key carries the tenant's
// namespace, so one tenant's key never names another's action. The entry
// format's version is in the Command: kjit versions sharing a store never
// read each other's entries. The Command and Action are uploaded too, so
// the ActionCache never points at an action the CAS cannot show.
#pragma once

#include <string>
#include <string_view>

namespace kjit {

inline constexpr std::string_view k_reapi_entry_path = "kjit-entry";

// The serialized Command naming the entry stored under `stored_key`.
std::string reapi_entry_command(std::string_view stored_key);
// The serialized Action around a Command and an input root, by their digests.
std::string reapi_entry_action(std::string_view command_hash, int64_t command_size, std::string_view empty_root_hash);

}  // namespace kjit
