// The kjit.v1.Recipes gRPC service: the recipes a namespace's compiles left
// (list, show, remove; server/compile/recipe_book.h), and the operator's
// seal on compiles after warm-up (server/compile/warmup_seal.h).
#pragma once

#include <memory>

#include "kjit/v1/cache.grpc.pb.h"
#include "server/compile/cached_compiler.h"
#include "server/rpc/call_gate.h"

namespace kjit {

class RecipeService final : public v1::Recipes::Service {
 public:
  // gate null: calls pass a gate without tenants or metrics.
  explicit RecipeService(std::shared_ptr<const CachedCompiler> compiler, std::shared_ptr<CallGate> gate = nullptr);

  grpc::Status ListRecipes(grpc::ServerContext*, const v1::ListRecipesRequest*, v1::ListRecipesResponse*) override;
  grpc::Status GetRecipe(grpc::ServerContext*, const v1::GetRecipeRequest*, v1::GetRecipeResponse*) override;
  grpc::Status RemoveRecipe(grpc::ServerContext*, const v1::RemoveRecipeRequest*,
                            v1::RemoveRecipeResponse*) override;
  grpc::Status SetSeal(grpc::ServerContext*, const v1::SealRequest*, v1::SealResponse*) override;

 private:
  std::shared_ptr<const CachedCompiler> compiler_;
  std::shared_ptr<CallGate> gate_;
};

}  // namespace kjit
