"""A Triton IR module whose compile costs as much CPU as asked: a chain of
`ops` elementwise transcendental ops over one tensor, which LLVM and ptxas
lower op by op (for sm_90, 50 ops are about 2.7 s of the compiling process's
own CPU on these machines, and 4 s more in ptxas). Tests of CPU bounds use
it where a real kernel's cost would depend on the machine's load."""


def heavy_ttir(ops):
    lines = [
        "module {",
        "  tt.func public @kjit_heavy(%p: !tt.ptr<f32> {tt.divisibility = 16 : i32}, "
        "%q: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {",
        "    %r = tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32>",
        "    %ps = tt.splat %p : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>",
        "    %pp = tt.addptr %ps, %r : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>",
        "    %v0 = tt.load %pp : tensor<1024x!tt.ptr<f32>>",
    ]
    for i in range(ops):
        op = ("math.sin", "math.exp", "math.cos")[i % 3]
        lines.append(f"    %t{i} = {op} %v{i} : tensor<1024xf32>")
        lines.append(f"    %v{i + 1} = arith.addf %t{i}, %v0 : tensor<1024xf32>")
    lines += [
        "    %qs = tt.splat %q : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>",
        "    %qp = tt.addptr %qs, %r : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>",
        f"    tt.store %qp, %v{ops} : tensor<1024x!tt.ptr<f32>>",
        "    tt.return",
        "  }",
        "}",
    ]
    return "\n".join(lines) + "\n"
