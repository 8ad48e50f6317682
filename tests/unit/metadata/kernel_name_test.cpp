// source_name_of: demangled, qualified, with template arguments, without the
// return type or parameter list.
#include "metadata/kernel_name.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>

namespace kjit {
namespace {

struct NameCase {
  const char* what;  // the test's name
  const char* lowered;
  const char* source;
};

// How gtest shows a case: the lowered name, not the struct's bytes.
void PrintTo(const NameCase& c, std::ostream* os) {
  *os << '"' << c.lowered << '"';
}

constexpr NameCase k_cases[] = {
    {"PlainFunctionLosesItsParameterList", "_Z10vector_addPKfS0_Pfi", "vector_add"},
    {"TemplateKeepsArgumentsAndLosesReturnType", "_Z5scaleIfEvPT_i", "scale<float>"},
    {"NamespaceIsKept", "_ZN2ns1kEPdi", "ns::k"},
    {"NamespaceIsKeptAroundATemplate", "_ZN2ns5scaleIfLi4EEEvPT_i", "ns::scale<float, 4>"},
    {"AnonymousNamespaceKeepsItsSpace", "_ZN12_GLOBAL__N_11kEPi", "(anonymous namespace)::k"},
    {"NestedTemplateArgumentsSurvive", "_Z1kIN2ns1SILi3EEEEvv", "k<ns::S<3> >"},
    {"BoolTemplateArgumentSurvives", "_Z3fooILb1EEvv", "foo<true>"},
    // void apply<void (*)(int)>(void (*)(int))
    {"FunctionPointerArgumentsDoNotConfuseTheTrimming", "_Z5applyIPFviEEvT_", "apply<void (*)(int)>"},
    // void k<int, float, double>((int)...)
    {"ParameterPackIsTrimmed", "_Z1kIiJfdEEvDpT_", "k<int, float, double>"},
    {"ExternCNamesStayAsTheyAre", "vector_add", "vector_add"},
    {"ExternCNamesWithDigitsStayAsTheyAre", "my_kernel_v2", "my_kernel_v2"},
    {"UndemanglableNameStaysAsItIs", "_Zgarbage", "_Zgarbage"},
    {"BareManglingPrefixStaysAsItIs", "_Z", "_Z"},
    {"EmptyNameStaysEmpty", "", ""},
};

class KernelName : public ::testing::TestWithParam<NameCase> {};

TEST_P(KernelName, SourceNameOfTheLoweredName) {
  EXPECT_EQ(source_name_of(GetParam().lowered), GetParam().source);
}

INSTANTIATE_TEST_SUITE_P(, KernelName, ::testing::ValuesIn(k_cases),
                         [](const ::testing::TestParamInfo<NameCase>& info) { return std::string(info.param.what); });

}  // namespace
}  // namespace kjit
