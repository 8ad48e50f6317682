#include "server/rpc/recipe_service.h"

#include "pipeline/cache_key.h"
#include "server/edge/status_mapping.h"
#include "server/rpc/caller_cache.h"

namespace kjit {
namespace {

Error recipes_off() {
  return make_error(ErrorCode::failed_precondition, "the compile cache is off on this daemon: no recipes are kept");
}

Status check_digest(std::string_view digest) {
  if (!is_key_hex(digest))
    return make_error(ErrorCode::invalid_argument,
                      "a recipe digest is 64 lowercase hex digits (kjit recipes ls), not '" +
                          std::string(digest.substr(0, 80)) + "'");
  return Ok{};
}

std::optional<AfterWarmup> from_wire(v1::AfterWarmup mode) {
  switch (mode) {
    case v1::AFTER_WARMUP_UNSPECIFIED:
      return AfterWarmup::off;  // the seal's default
    case v1::AFTER_WARMUP_COUNT:
      return AfterWarmup::count;
    case v1::AFTER_WARMUP_WARN:
      return AfterWarmup::warn;
    case v1::AFTER_WARMUP_REFUSE:
      return AfterWarmup::refuse;
    default:
      return std::nullopt;
  }
}

v1::AfterWarmup to_wire(AfterWarmup mode) {
  switch (mode) {
    case AfterWarmup::count:
      return v1::AFTER_WARMUP_COUNT;
    case AfterWarmup::warn:
      return v1::AFTER_WARMUP_WARN;
    case AfterWarmup::refuse:
      return v1::AFTER_WARMUP_REFUSE;
    case AfterWarmup::off:
      break;
  }
  return v1::AFTER_WARMUP_UNSPECIFIED;
}

}  // namespace

RecipeService::RecipeService(std::shared_ptr<const CachedCompiler> compiler, std::shared_ptr<CallGate> gate)
    : compiler_(std::move(compiler)), gate_(gate ? std::move(gate) : std::make_shared<CallGate>(CallGate::Options{})) {}

grpc::Status RecipeService::ListRecipes(grpc::ServerContext* context, const v1::ListRecipesRequest* request,
                                        v1::ListRecipesResponse* response) {
  return gate_->serve(context, "ListRecipes", [&](const Caller& caller) -> grpc::Status {
    Result<std::string> ns = recipe_namespace_of(caller, request->namespace_());
    if (!ns) return to_grpc_status(ns.error(), *context);
    RecipeBook* recipes = compiler_->recipes();
    if (!recipes) return to_grpc_status(recipes_off(), *context);
    Result<std::vector<v1::RecipeSummary>> listed = recipes->list(*ns, request->since_unix());
    if (!listed) return to_grpc_status(listed.error(), *context);
    for (v1::RecipeSummary& summary : *listed) {
      if (request->limit() && static_cast<uint32_t>(response->recipes_size()) >= request->limit()) break;
      *response->add_recipes() = std::move(summary);
    }
    return grpc::Status::OK;
  });
}

grpc::Status RecipeService::GetRecipe(grpc::ServerContext* context, const v1::GetRecipeRequest* request,
                                      v1::GetRecipeResponse* response) {
  return gate_->serve(context, "GetRecipe", [&](const Caller& caller) -> grpc::Status {
    Result<std::string> ns = recipe_namespace_of(caller, request->namespace_());
    if (!ns) return to_grpc_status(ns.error(), *context);
    if (Status s = check_digest(request->digest()); !s) return to_grpc_status(s.error(), *context);
    RecipeBook* recipes = compiler_->recipes();
    if (!recipes) return to_grpc_status(recipes_off(), *context);
    auto found = recipes->get(*ns, request->digest());
    if (!found) return to_grpc_status(found.error(), *context);
    *response->mutable_summary() = std::move(found->first);
    *response->mutable_request() = std::move(found->second);
    return grpc::Status::OK;
  });
}

grpc::Status RecipeService::RemoveRecipe(grpc::ServerContext* context, const v1::RemoveRecipeRequest* request,
                                         v1::RemoveRecipeResponse* response) {
  return gate_->serve(context, "RemoveRecipe", [&](const Caller& caller) -> grpc::Status {
    Result<std::string> ns = recipe_namespace_of(caller, request->namespace_());
    if (!ns) return to_grpc_status(ns.error(), *context);
    if (Status s = check_digest(request->digest()); !s) return to_grpc_status(s.error(), *context);
    RecipeBook* recipes = compiler_->recipes();
    if (!recipes) return to_grpc_status(recipes_off(), *context);
    Result<bool> removed = recipes->remove(*ns, request->digest());
    if (!removed) return to_grpc_status(removed.error(), *context);
    response->set_removed(*removed);
    return grpc::Status::OK;
  });
}

grpc::Status RecipeService::SetSeal(grpc::ServerContext* context, const v1::SealRequest* request,
                                    v1::SealResponse* response) {
  return gate_->serve(context, "SetSeal", [&](const Caller& caller) -> grpc::Status {
    if (!caller.is_operator())
      return to_grpc_status(gate_->operators_only("sealing warm-up", ""), *context);
    const std::optional<AfterWarmup> mode = from_wire(request->after_warmup());
    if (!mode)
      return to_grpc_status(make_error(ErrorCode::invalid_argument,
                                       "after_warmup " + std::to_string(request->after_warmup()) +
                                           " is not count, warn or refuse"),
                            *context);
    if (request->all_namespaces() && !request->namespace_().empty())
      return to_grpc_status(
          make_error(ErrorCode::invalid_argument, "a seal is of all namespaces or of one namespace, not both"),
          *context);
    if (request->namespace_().size() > 256 || request->namespace_().find('\0') != std::string::npos)
      return to_grpc_status(
          make_error(ErrorCode::invalid_argument, "namespace is longer than 256 bytes or holds a NUL byte"), *context);
    WarmupSeal& seal = compiler_->seal();
    if (request->unseal())
      seal.unseal(request->all_namespaces(), request->namespace_());
    else
      seal.seal(request->all_namespaces(), request->namespace_(), *mode);
    for (const SealState& state : seal.seals()) {
      v1::Seal* out = response->add_seals();
      out->set_all_namespaces(state.all_namespaces);
      out->set_namespace_(state.ns);
      out->set_after_warmup(to_wire(state.mode));
      out->set_sealed_unix(state.sealed_unix);
    }
    return grpc::Status::OK;
  });
}

}  // namespace kjit
