// The Client's calls of the Recipes service: recipes (list, show, remove)
// and the operator's seal on compiles after warm-up.
#include "client/client_impl.h"
#include "client/compile_request_wire.h"
#include "convert/wire_convert.h"

namespace kjit {
namespace {

RecipeSummary from_wire(const v1::RecipeSummary& wire) {
  RecipeSummary out;
  out.digest = wire.digest();
  out.input_kind = from_proto(wire.input_kind()).value_or(InputKind::cuda_source);
  out.input_name = wire.input_name();
  out.artifact = from_proto(wire.artifact());
  out.bytes = wire.bytes();
  out.created_unix = wire.created_unix();
  out.last_asked_unix = wire.last_asked_unix();
  out.last_target = wire.last_target();
  return out;
}

std::string to_text(v1::AfterWarmup mode) {
  switch (mode) {
    case v1::AFTER_WARMUP_COUNT:
      return "count";
    case v1::AFTER_WARMUP_WARN:
      return "warn";
    case v1::AFTER_WARMUP_REFUSE:
      return "refuse";
    default:
      return "";
  }
}

}  // namespace

Result<std::vector<RecipeSummary>> Client::list_recipes(const std::string& ns, int64_t since_unix,
                                                        uint32_t limit) const {
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::ListRecipesRequest request;
  request.set_namespace_(ns);
  request.set_since_unix(since_unix);
  request.set_limit(limit);
  v1::ListRecipesResponse response;
  grpc::Status status = impl_->recipes->ListRecipes(&context, request, &response);
  if (!status.ok()) return from_grpc_status(status, context);
  std::vector<RecipeSummary> out;
  for (const v1::RecipeSummary& summary : response.recipes()) out.push_back(from_wire(summary));
  return out;
}

Result<Recipe> Client::get_recipe(const std::string& ns, const std::string& digest) const {
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::GetRecipeRequest request;
  request.set_namespace_(ns);
  request.set_digest(digest);
  v1::GetRecipeResponse response;
  grpc::Status status = impl_->recipes->GetRecipe(&context, request, &response);
  if (!status.ok()) return from_grpc_status(status, context);
  Result<CompileRequest> compile = kjit::from_wire(response.request());
  if (!compile) return compile.error();
  return Recipe{from_wire(response.summary()), std::move(compile.value())};
}

Result<bool> Client::remove_recipe(const std::string& ns, const std::string& digest) const {
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::RemoveRecipeRequest request;
  request.set_namespace_(ns);
  request.set_digest(digest);
  v1::RemoveRecipeResponse response;
  grpc::Status status = impl_->recipes->RemoveRecipe(&context, request, &response);
  if (!status.ok()) return from_grpc_status(status, context);
  return response.removed();
}

Result<std::vector<WarmupSealState>> Client::set_seal(bool unseal, bool all_namespaces, const std::string& ns,
                                                      const std::string& after_warmup) const {
  v1::SealRequest request;
  request.set_unseal(unseal);
  request.set_all_namespaces(all_namespaces);
  request.set_namespace_(ns);
  if (after_warmup == "count")
    request.set_after_warmup(v1::AFTER_WARMUP_COUNT);
  else if (after_warmup == "warn")
    request.set_after_warmup(v1::AFTER_WARMUP_WARN);
  else if (after_warmup == "refuse")
    request.set_after_warmup(v1::AFTER_WARMUP_REFUSE);
  else if (!after_warmup.empty())
    return make_error(ErrorCode::invalid_argument,
                      "after_warmup is count, warn or refuse, not '" + after_warmup + "'");
  grpc::ClientContext context;
  if (Status ready = impl_->prepare(context); !ready) return ready.error();
  v1::SealResponse response;
  grpc::Status status = impl_->recipes->SetSeal(&context, request, &response);
  if (!status.ok()) return from_grpc_status(status, context);
  std::vector<WarmupSealState> out;
  for (const v1::Seal& seal : response.seals())
    out.push_back(WarmupSealState{seal.all_namespaces(), seal.namespace_(), to_text(seal.after_warmup()),
                                  seal.sealed_unix()});
  return out;
}

}  // namespace kjit
