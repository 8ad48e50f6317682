// source_name_of: demangled, qualified, with template arguments, without the
// return type or parameter list.
#include "metadata/kernel_name.h"

#include <gtest/gtest.h>

namespace kjit {
namespace {

TEST(KernelName, PlainFunctionLosesItsParameterList) {
  EXPECT_EQ(source_name_of("_Z10vector_addPKfS0_Pfi"), "vector_add");
}

TEST(KernelName, TemplateKeepsArgumentsAndLosesReturnType) {
  EXPECT_EQ(source_name_of("_Z5scaleIfEvPT_i"), "scale<float>");
}

TEST(KernelName, NamespaceIsKept) {
  EXPECT_EQ(source_name_of("_ZN2ns1kEPdi"), "ns::k");
  EXPECT_EQ(source_name_of("_ZN2ns5scaleIfLi4EEEvPT_i"), "ns::scale<float, 4>");
}

TEST(KernelName, AnonymousNamespaceKeepsItsSpace) {
  EXPECT_EQ(source_name_of("_ZN12_GLOBAL__N_11kEPi"), "(anonymous namespace)::k");
}

TEST(KernelName, NestedTemplateArgumentsSurvive) {
  EXPECT_EQ(source_name_of("_Z1kIN2ns1SILi3EEEEvv"), "k<ns::S<3> >");
  EXPECT_EQ(source_name_of("_Z3fooILb1EEvv"), "foo<true>");
}

TEST(KernelName, FunctionPointerArgumentsDoNotConfuseTheTrimming) {
  // void apply<void (*)(int)>(void (*)(int))
  EXPECT_EQ(source_name_of("_Z5applyIPFviEEvT_"), "apply<void (*)(int)>");
}

TEST(KernelName, ParameterPackIsTrimmed) {
  // void k<int, float, double>((int)...)
  EXPECT_EQ(source_name_of("_Z1kIiJfdEEvDpT_"), "k<int, float, double>");
}

TEST(KernelName, ExternCNamesStayAsTheyAre) {
  EXPECT_EQ(source_name_of("vector_add"), "vector_add");
  EXPECT_EQ(source_name_of("my_kernel_v2"), "my_kernel_v2");
}

TEST(KernelName, UndemanglableNameStaysAsItIs) {
  EXPECT_EQ(source_name_of("_Zgarbage"), "_Zgarbage");
  EXPECT_EQ(source_name_of("_Z"), "_Z");
  EXPECT_EQ(source_name_of(""), "");
}

}  // namespace
}  // namespace kjit
