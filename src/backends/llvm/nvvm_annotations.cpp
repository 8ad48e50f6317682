#include "backends/llvm/nvvm_annotations.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>

#include <charconv>
#include <map>
#include <set>

namespace kjit {
namespace {

constexpr std::array<const char*, 3> k_xyz_suffix{"x", "y", "z"};

// Applies one nvvm.annotations entry; false when the key is not a bound.
bool apply_annotation(NvvmKernel& kernel, std::string_view key, uint32_t value) {
  for (size_t i = 0; i < 3; ++i) {
    if (key == std::string("maxntid") + k_xyz_suffix[i]) return kernel.maxntid[i] = value, true;
    if (key == std::string("reqntid") + k_xyz_suffix[i]) return kernel.reqntid[i] = value, true;
    if (key == std::string("cluster_dim_") + k_xyz_suffix[i]) {
      kernel.has_cluster_dim = true;
      return kernel.cluster_dim[i] = value, true;
    }
  }
  if (key == "minctasm") return kernel.minctasm = value, true;
  if (key == "maxnreg") return kernel.maxnreg = value, true;
  if (key == "maxclusterrank") return kernel.maxclusterrank = value, true;
  return false;
}

// "128", "128,2", "128,2,1": the attribute form of a shape.
bool parse_numbers(std::string_view text, std::vector<uint32_t>& out) {
  while (true) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    uint32_t value = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc{} || end != item.data() + item.size()) return false;
    out.push_back(value);
    if (comma == std::string_view::npos) return true;
    text.remove_prefix(comma + 1);
  }
}

Status apply_attributes(NvvmKernel& kernel, const llvm::Function& function) {
  const std::array<std::pair<const char*, uint32_t*>, 3> scalars{{{"nvvm.minctasm", &kernel.minctasm},
                                                                  {"nvvm.maxnreg", &kernel.maxnreg},
                                                                  {"nvvm.maxclusterrank", &kernel.maxclusterrank}}};
  for (auto [attribute, field] :
       {std::pair{"nvvm.maxntid", &kernel.maxntid}, std::pair{"nvvm.reqntid", &kernel.reqntid},
        std::pair{"nvvm.cluster_dim", &kernel.cluster_dim}}) {
    if (!function.hasFnAttribute(attribute)) continue;
    std::string_view text = function.getFnAttribute(attribute).getValueAsString();
    std::vector<uint32_t> numbers;
    if (!parse_numbers(text, numbers) || numbers.size() > 3) {
      return make_error(ErrorCode::invalid_argument, "kernel " + kernel.name + ": attribute \"" + attribute + "\"=\"" +
                                                         std::string(text) +
                                                         "\" is not 1 to 3 comma-separated numbers");
    }
    for (size_t i = 0; i < numbers.size(); ++i) (*field)[i] = numbers[i];
    if (std::string_view(attribute) == "nvvm.cluster_dim") kernel.has_cluster_dim = true;
  }
  for (auto [attribute, field] : scalars) {
    if (!function.hasFnAttribute(attribute)) continue;
    std::string_view text = function.getFnAttribute(attribute).getValueAsString();
    std::vector<uint32_t> numbers;
    if (!parse_numbers(text, numbers) || numbers.size() != 1) {
      return make_error(ErrorCode::invalid_argument, "kernel " + kernel.name + ": attribute \"" + attribute + "\"=\"" +
                                                         std::string(text) + "\" is not a number");
    }
    *field = numbers[0];
  }
  return Ok{};
}

// A shape given in part has 1 for what it leaves out.
void complete_shape(std::array<uint32_t, 3>& shape) {
  if (shape[0] == 0 && shape[1] == 0 && shape[2] == 0) return;
  for (uint32_t& v : shape)
    if (v == 0) v = 1;
}

// function -> its nvvm.annotations entries (key, value), in order.
std::map<const llvm::Function*, std::vector<std::pair<std::string, uint32_t>>> annotations_of(
    const llvm::Module& module) {
  std::map<const llvm::Function*, std::vector<std::pair<std::string, uint32_t>>> out;
  const llvm::NamedMDNode* annotations = module.getNamedMetadata("nvvm.annotations");
  if (!annotations) return out;
  for (const llvm::MDNode* node : annotations->operands()) {
    if (!node || node->getNumOperands() < 1) continue;
    const auto* function = llvm::mdconst::dyn_extract_or_null<llvm::Function>(node->getOperand(0));
    if (!function) continue;
    for (unsigned i = 1; i + 1 < node->getNumOperands(); i += 2) {
      const auto* key = llvm::dyn_cast_or_null<llvm::MDString>(node->getOperand(i));
      const auto* value = llvm::mdconst::dyn_extract_or_null<llvm::ConstantInt>(node->getOperand(i + 1));
      if (key && value) out[function].push_back({key->getString().str(), static_cast<uint32_t>(value->getZExtValue())});
    }
  }
  return out;
}

}  // namespace

Result<std::vector<NvvmKernel>> read_nvvm_kernels(const llvm::Module& module) {
  auto annotations = annotations_of(module);
  std::vector<NvvmKernel> kernels;
  for (const llvm::Function& function : module) {
    if (function.isDeclaration()) continue;
    bool is_kernel = function.getCallingConv() == llvm::CallingConv::PTX_Kernel;
    auto it = annotations.find(&function);
    if (it != annotations.end())
      for (const auto& [key, value] : it->second)
        if (key == "kernel") is_kernel = value != 0;
    if (!is_kernel) continue;
    NvvmKernel kernel;
    kernel.name = function.getName().str();
    if (Status s = apply_attributes(kernel, function); !s) return s.error();
    if (it != annotations.end())
      for (const auto& [key, value] : it->second) apply_annotation(kernel, key, value);
    complete_shape(kernel.maxntid);
    complete_shape(kernel.reqntid);
    if (kernel.cluster_dim[0] != 0) complete_shape(kernel.cluster_dim);
    kernels.push_back(std::move(kernel));
  }
  return kernels;
}

void annotate_kernels(llvm::Module& module, const std::vector<NvvmKernel>& kernels) {
  auto existing = annotations_of(module);
  llvm::LLVMContext& context = module.getContext();
  llvm::NamedMDNode* annotations = module.getOrInsertNamedMetadata("nvvm.annotations");
  for (const NvvmKernel& kernel : kernels) {
    llvm::Function* function = module.getFunction(kernel.name);
    if (!function) continue;
    std::set<std::string> have;
    for (const auto& [key, value] : existing[function]) have.insert(key);
    std::vector<std::pair<std::string, uint32_t>> wanted;
    for (size_t i = 0; i < 3; ++i) {
      if (kernel.maxntid[i]) wanted.push_back({std::string("maxntid") + k_xyz_suffix[i], kernel.maxntid[i]});
      if (kernel.reqntid[i]) wanted.push_back({std::string("reqntid") + k_xyz_suffix[i], kernel.reqntid[i]});
      if (kernel.has_cluster_dim)
        wanted.push_back({std::string("cluster_dim_") + k_xyz_suffix[i], kernel.cluster_dim[i]});
    }
    if (kernel.minctasm) wanted.push_back({"minctasm", kernel.minctasm});
    if (kernel.maxnreg) wanted.push_back({"maxnreg", kernel.maxnreg});
    if (kernel.maxclusterrank) wanted.push_back({"maxclusterrank", kernel.maxclusterrank});
    for (const auto& [key, value] : wanted) {
      if (have.count(key)) continue;
      llvm::Metadata* entry[] = {
          llvm::ValueAsMetadata::get(function), llvm::MDString::get(context, key),
          llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(context), value))};
      annotations->addOperand(llvm::MDNode::get(context, entry));
    }
  }
}

std::string add_cluster_directives(std::string_view ptx, const std::vector<NvvmKernel>& kernels) {
  std::string out(ptx);
  for (const NvvmKernel& kernel : kernels) {
    if (!kernel.has_cluster_dim) continue;
    size_t entry = out.find(".entry " + kernel.name + "(");
    if (entry == std::string::npos) continue;
    size_t params_end = out.find(')', entry);
    if (params_end == std::string::npos) continue;
    size_t body = out.find('{', params_end);
    if (body == std::string::npos) continue;
    std::string_view directives(out.data() + params_end, body - params_end);
    if (directives.find(".explicitcluster") != std::string_view::npos ||
        directives.find(".reqnctapercluster") != std::string_view::npos)
      continue;
    std::string added = ".explicitcluster\n";
    if (kernel.cluster_dim[0] != 0) {
      added += ".reqnctapercluster " + std::to_string(kernel.cluster_dim[0]) + ", " +
               std::to_string(kernel.cluster_dim[1]) + ", " + std::to_string(kernel.cluster_dim[2]) + "\n";
    }
    out.insert(body, added);
  }
  return out;
}

}  // namespace kjit
