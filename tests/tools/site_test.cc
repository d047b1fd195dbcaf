// site_test.cc: the site and phase of a recorded stack (tools/owners/site.h;
// the rules are docs/owners.md's "Sites and phases"). First every distinct
// stack of a real PyTorch 2.11 snapshot (data/h200/torch211_h200_full_default,
// extracted to data/stacks/ by extract_stacks.py), whose step() of
// tests/gpu/capture_torch_snapshot.py is: line 34 the input (other), 35 the
// model's forward, 36 the loss (other: outside any module), 37 backward (run
// on autograd's thread: C++ frames name the node), 38 opt.step() (inside
// "Optimizer.step#AdamW.step"); main's line 62 builds the model and line 76
// is the capped run's out-of-memory allocation. The same stacks as
// stacks="python" records them, and with frames dropped so that later rules
// name them. Then stacks built by hand: a profiler's ranges, the text, Umpire
// and RMM formats' labels, whose files count as the user's, long keys.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tests/tools/site_util.h"

namespace {

using site_test::C;
using site_test::F;
using site_test::Fixture;
using site_test::L;
using site_test::RealStack;
using site_test::Stack;
using site_test::View;

const std::string kScript = "/work/main/tests/gpu/capture_torch_snapshot.py";
const std::string kTorch = "/opt/torch/.venv/lib/python3.12/site-packages/torch/";

const Fixture &Real()
{
    static const Fixture fx("torch211_h200_full_default.stacks");
    return fx;
}

struct Want {
    ga_site_kind_t kind;
    std::string key;
    ga_phase_t phase;
};

// Stacks first..last (inclusive) of the fixture all classify as w.
struct Range {
    size_t first, last;
    Want w;
};

Want Code(int line, const char *func, ga_phase_t p)
{
    return Want{GA_SITE_CODE, kScript + ":" + std::to_string(line) + " " + func, p};
}

Want Node(const char *cls)
{
    return Want{GA_SITE_NODE, cls, GA_PHASE_BACKWARD};
}

// Every stack of the snapshot as recorded (stacks="all"), by the rule that names it.
const std::vector<Range> kAll = {
    {0, 1, Code(62, "main", GA_PHASE_OTHER)}, // model.cuda(): module.py's _apply, no module call
    {2, 2, Code(34, "step", GA_PHASE_OTHER)}, // torch.randn
    {3, 24, Code(35, "step", GA_PHASE_FORWARD)},
    {25, 27, Code(36, "step", GA_PHASE_OTHER)},    // pow, mean: outside any module
    {28, 28, Code(37, "step", GA_PHASE_BACKWARD)}, // the initial gradient, on the caller's thread
    {29, 29, Node("MeanBackward0")},
    {30, 32, Node("PowBackward0")},
    {33, 33, Node("NativeLayerNormBackward0")},
    {34, 34, Node("NativeDropoutBackward0")},
    {35, 37, Node("AddmmBackward0")},
    // The engine sums a gradient to its input's shape (validate_outputs), outside any node.
    {38, 39, Want{GA_SITE_OP, "at::_ops::sum_dim_IntList", GA_PHASE_BACKWARD}},
    {40, 40, Node("ReluBackward0")},
    {41, 41, Node("ViewBackward0")}, // not ReshapeAliasBackward0_apply_functional, the function it calls
    {42, 47, Node("ScaledDotProductEfficientAttentionBackward0")},
    {48, 48, Node("SelectBackward0")},
    {49, 50, Node("MmBackward0")},
    {51, 53, Code(38, "step", GA_PHASE_OPTIMIZER)},
    {54, 54, Code(76, "main", GA_PHASE_OTHER)}, // the out-of-memory entry
};

void ExpectClass(const ga_site_class_t &c, const Want &w, const std::string &what)
{
    EXPECT_EQ(c.kind, w.kind) << what << ": " << ga_site_kind_name(c.kind) << " " << c.key;
    EXPECT_EQ(std::string(c.key), w.key) << what;
    EXPECT_EQ(c.phase, w.phase) << what << ": " << ga_phase_name(c.phase);
}

TEST(SiteReal, FixtureReads)
{
    const Fixture &fx = Real();
    ASSERT_EQ(fx.error, "");
    EXPECT_EQ(fx.frames.size(), 384u);
    ASSERT_EQ(fx.stacks.size(), 55u);
    EXPECT_EQ(fx.actions[54], "oom");
    EXPECT_EQ(kAll.back().last + 1, fx.stacks.size());
}

TEST(SiteReal, EveryStackAsRecorded)
{
    const Fixture &fx = Real();
    ASSERT_EQ(fx.stacks.size(), 55u) << fx.error;
    for (const Range &r : kAll)
        for (size_t i = r.first; i <= r.last; i++) {
            // The key callback is optional: the classification never needs it.
            for (bool keys : {true, false}) {
                RealStack s(fx, i, View::All, keys);
                ExpectClass(s.Classify(), r.w, "stack " + std::to_string(i));
            }
        }
}

// The frame that names the site: the user's line, the node's apply, the outermost op.
TEST(SiteReal, NamingFrame)
{
    const Fixture &fx = Real();
    ASSERT_EQ(fx.stacks.size(), 55u) << fx.error;
    RealStack fwd(fx, 11, View::All);
    ga_site_class_t c = fwd.Classify();
    ASSERT_LT(c.frame, fwd.frames.size());
    EXPECT_EQ(fwd.frames[c.frame]->file, kScript);
    EXPECT_EQ(fwd.frames[c.frame]->line, 35);
    for (size_t i = 0; i < c.frame; i++) // nothing of the script's before it
        EXPECT_NE(fwd.frames[i]->file, kScript) << i;

    RealStack bwd(fx, 41, View::All);
    c = bwd.Classify();
    ASSERT_LT(c.frame, bwd.frames.size());
    EXPECT_EQ(bwd.frames[c.frame]->name.rfind("torch::autograd::generated::ViewBackward0::apply(", 0), 0u);

    RealStack sum(fx, 38, View::All);
    c = sum.Classify();
    ASSERT_LT(c.frame, sum.frames.size());
    EXPECT_EQ(sum.frames[c.frame]->name.rfind("at::_ops::sum_dim_IntList::call(", 0), 0u);
    for (size_t i = c.frame + 1; i < sum.frames.size(); i++)
        EXPECT_NE(sum.frames[i]->name.rfind("at::_ops::", 0), 0u) << "an op outside it at " << i;
}

// stacks="python": the same classes, but for the backward's allocations, which
// ran on autograd's thread with no Python frame: nothing recorded.
TEST(SiteReal, PythonStacks)
{
    const Fixture &fx = Real();
    ASSERT_EQ(fx.stacks.size(), 55u) << fx.error;
    for (const Range &r : kAll)
        for (size_t i = r.first; i <= r.last; i++) {
            RealStack s(fx, i, View::Python);
            bool autograd_thread = i >= 29 && i <= 50;
            EXPECT_EQ(s.frames.empty(), autograd_thread) << i;
            Want w = autograd_thread ? Want{GA_SITE_NONE, "(no stack recorded)", GA_PHASE_OTHER} : r.w;
            ga_site_class_t c = s.Classify();
            ExpectClass(c, w, "python stack " + std::to_string(i));
            if (autograd_thread) {
                EXPECT_EQ(c.frame, SIZE_MAX);
            }
        }
}

// Without its Python frames a stack is named by its node or its OUTERMOST op:
// the dropout module's allocation is at::_ops::dropout's (the call the model
// made), not the empty_strided inside it; with no module frame, no phase.
TEST(SiteReal, CppOnlyNamesTheOutermostOp)
{
    const Fixture &fx = Real();
    ASSERT_EQ(fx.stacks.size(), 55u) << fx.error;
    ExpectClass(RealStack(fx, 11, View::Cpp).Classify(), Want{GA_SITE_OP, "at::_ops::dropout", GA_PHASE_OTHER},
                "dropout");
    ExpectClass(RealStack(fx, 2, View::Cpp).Classify(), Want{GA_SITE_OP, "at::_ops::randn_generator", GA_PHASE_OTHER},
                "randn");
    ExpectClass(RealStack(fx, 16, View::Cpp).Classify(), Want{GA_SITE_OP, "at::_ops::linear", GA_PHASE_OTHER},
                "linear");
    // The optimizer's allocations keep their phase from the annotation frame.
    ExpectClass(RealStack(fx, 53, View::Cpp).Classify(),
                Want{GA_SITE_OP, "at::_ops::_foreach_sqrt", GA_PHASE_OPTIMIZER}, "adamw");
    // Backward stacks have no Python frame to lose.
    ExpectClass(RealStack(fx, 49, View::Cpp).Classify(), Node("MmBackward0"), "mm backward");
}

// With only torch's Python frames (the script's dropped, as when torch code
// runs from a torch entry point), the OUTERMOST torch frame names it: the
// module call closest to whatever called into torch.
TEST(SiteReal, TorchFramesOnly)
{
    const Fixture &fx = Real();
    ASSERT_EQ(fx.stacks.size(), 55u) << fx.error;
    auto python_no_script = [&](size_t i) {
        std::vector<const site_test::Frame *> keep;
        for (const site_test::Frame *f : RealStack::Pick(fx, i, View::Python))
            if (site_test::Keeps(View::NoScript, *f))
                keep.push_back(f);
        return keep;
    };
    Stack dropout(GA_STACK_FRAMES, python_no_script(11), true);
    ExpectClass(dropout.Classify(),
                Want{GA_SITE_TORCH, kTorch + "nn/modules/module.py:1779 _wrapped_call_impl", GA_PHASE_FORWARD},
                "dropout");
    Stack adam(GA_STACK_FRAMES, python_no_script(53), true);
    ExpectClass(adam.Classify(), Want{GA_SITE_TORCH, kTorch + "optim/optimizer.py:533 wrapper", GA_PHASE_OPTIMIZER},
                "adamw");
    Stack cuda(GA_STACK_FRAMES, python_no_script(0), true);
    ExpectClass(cuda.Classify(), Want{GA_SITE_TORCH, kTorch + "nn/modules/module.py:1097 cuda", GA_PHASE_OTHER},
                "model.cuda()");
    // With C++ frames too, a node or an op comes before torch's frames.
    ExpectClass(RealStack(fx, 11, View::NoScript).Classify(), Want{GA_SITE_OP, "at::_ops::dropout", GA_PHASE_FORWARD},
                "dropout, all frames");
}

// ---- a profiler's ranges (GA_STACK_RANGES), innermost first ----

TEST(SiteRanges, PythonFunctionInModule)
{
    Stack s(GA_STACK_RANGES, {F("train.py", 35, "step"), L("nn.Module: Linear_0"), L("ProfilerStep#3")});
    ExpectClass(s.Classify(), Want{GA_SITE_CODE, "train.py:35 step", GA_PHASE_FORWARD}, "python frame");
    EXPECT_EQ(s.Classify().frame, 0u);
    // The profiler's own spelling of a Python function, "FILE(LINE): FUNCTION",
    // torch's files relative to its package.
    Stack t(GA_STACK_RANGES, {L("aten::addmm"), L("aten::linear"), L("torch/nn/modules/linear.py(125): forward"),
                              L("nn.Module: Linear_0"), L("torch/nn/modules/module.py(1520): _call_impl"),
                              L("train.py(35): step"), L("ProfilerStep#3")});
    ga_site_class_t c = t.Classify();
    ExpectClass(c, Want{GA_SITE_CODE, "train.py:35 step", GA_PHASE_FORWARD}, "tracer names");
    EXPECT_EQ(c.frame, 5u);
}

TEST(SiteRanges, AutogradNode)
{
    Stack s(GA_STACK_RANGES, {L("aten::mm"), L("autograd::engine::evaluate_function: MmBackward0")});
    ExpectClass(s.Classify(), Want{GA_SITE_NODE, "MmBackward0", GA_PHASE_BACKWARD}, "mm");
    EXPECT_EQ(s.Classify().frame, 1u);
    // The node's own range is innermost; AccumulateGrad is named as the engine names it.
    Stack acc(GA_STACK_RANGES, {L("aten::add_"), L("torch::autograd::AccumulateGrad"),
                                L("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad")});
    ExpectClass(acc.Classify(), Want{GA_SITE_NODE, "AccumulateGrad", GA_PHASE_BACKWARD}, "accumulate");
    EXPECT_EQ(acc.Classify().frame, 1u);
    // A Python autograd.Function's node: whatever the engine ran.
    Stack py(GA_STACK_RANGES, {L("aten::empty"), L("autograd::engine::evaluate_function: CompiledFunctionBackward")});
    ExpectClass(py.Classify(), Want{GA_SITE_NODE, "CompiledFunctionBackward", GA_PHASE_BACKWARD}, "python function");
    // Windows' demangler adds "struct "; a template's arguments keep their namespaces.
    Stack win(GA_STACK_RANGES, {L("autograd::engine::evaluate_function: struct torch::autograd::AccumulateGrad")});
    ExpectClass(win.Classify(), Want{GA_SITE_NODE, "AccumulateGrad", GA_PHASE_BACKWARD}, "windows");
    Stack cpp(GA_STACK_RANGES, {L("autograd::engine::evaluate_function: torch::autograd::CppNode<ns::Fn>")});
    ExpectClass(cpp.Classify(), Want{GA_SITE_NODE, "CppNode<ns::Fn>", GA_PHASE_BACKWARD}, "C++ function");
}

TEST(SiteRanges, OutermostOp)
{
    Stack s(GA_STACK_RANGES, {L("aten::_foreach_add_"), L("Optimizer.step#AdamW.step")});
    ExpectClass(s.Classify(), Want{GA_SITE_OP, "aten::_foreach_add_", GA_PHASE_OPTIMIZER}, "foreach");
    Stack t(GA_STACK_RANGES,
            {L("aten::empty_strided"), L("aten::empty_like"), L("aten::zeros_like"), L("ProfilerStep#3")});
    ExpectClass(t.Classify(), Want{GA_SITE_OP, "aten::zeros_like", GA_PHASE_OTHER}, "zeros_like");
    EXPECT_EQ(t.Classify().frame, 2u);
    Stack z(GA_STACK_RANGES, {L("aten::zero_"), L("Optimizer.zero_grad#SGD.zero_grad")});
    ExpectClass(z.Classify(), Want{GA_SITE_OP, "aten::zero_", GA_PHASE_OPTIMIZER}, "zero_grad");
    // Other operator namespaces are operators too.
    Stack d(GA_STACK_RANGES, {L("record_param_comms"), L("c10d::allreduce_")});
    ExpectClass(d.Classify(), Want{GA_SITE_OP, "c10d::allreduce_", GA_PHASE_OTHER}, "c10d");
}

TEST(SiteRanges, RangesOnly)
{
    Stack s(GA_STACK_RANGES, {L("attention block"), L("ProfilerStep#3")});
    ExpectClass(s.Classify(), Want{GA_SITE_RANGE, "attention block", GA_PHASE_OTHER}, "named range");
    Stack f(GA_STACK_RANGES, {L("## forward ##")});
    ExpectClass(f.Classify(), Want{GA_SITE_RANGE, "## forward ##", GA_PHASE_FORWARD}, "forward by its word");
    Stack b(GA_STACK_RANGES, {L("## backward ##"), L("## forward ##")});
    ExpectClass(b.Classify(), Want{GA_SITE_RANGE, "## backward ##", GA_PHASE_BACKWARD}, "backward first");
    Stack o(GA_STACK_RANGES, {L("Optimizer.step#AdamW.step"), L("nn.Module: Linear_0")});
    ExpectClass(o.Classify(), Want{GA_SITE_RANGE, "Optimizer.step#AdamW.step", GA_PHASE_OPTIMIZER}, "optimizer first");
}

// ---- call stacks built by hand (GA_STACK_FRAMES) ----

TEST(SiteFrames, ActivationCheckpointing)
{
    const std::string t = kTorch;
    // use_reentrant=False: the recomputation runs in the saved-tensor unpack hook, during backward.
    Stack re(GA_STACK_FRAMES, {F("model.py", 20, "forward"), F(t + "nn/modules/module.py", 1790, "_call_impl"),
                               F(t + "utils/checkpoint.py", 1588, "recompute_fn"),
                               F(t + "utils/checkpoint.py", 1200, "_run_fn_with_dynamo_disabled"),
                               F(t + "utils/checkpoint.py", 1230, "unpack_hook")});
    ExpectClass(re.Classify(), Want{GA_SITE_CODE, "model.py:20 forward", GA_PHASE_BACKWARD}, "recompute");
    // use_reentrant=True: CheckpointFunction.backward.
    Stack rb(GA_STACK_FRAMES, {F("model.py", 20, "forward"), F(t + "utils/checkpoint.py", 300, "backward"),
                               F(t + "autograd/function.py", 307, "apply")});
    ExpectClass(rb.Classify(), Want{GA_SITE_CODE, "model.py:20 forward", GA_PHASE_BACKWARD}, "reentrant");
    // The checkpointed forward itself is forward.
    Stack fw(GA_STACK_FRAMES, {F("model.py", 20, "forward"), F(t + "utils/checkpoint.py", 1700, "checkpoint"),
                               F(t + "nn/modules/module.py", 1790, "_call_impl"), F("train.py", 35, "step")});
    ExpectClass(fw.Classify(), Want{GA_SITE_CODE, "model.py:20 forward", GA_PHASE_FORWARD}, "checkpoint forward");
}

// Each Python frame of torch's that gives a phase, alone under the user's
// line; and torch's functions of the same files that do not.
TEST(SiteFrames, PythonPhaseFrames)
{
    struct {
        const char *rel, *func;
        ga_phase_t phase;
    } cases[] = {
        {"autograd/__init__.py", "backward", GA_PHASE_BACKWARD},
        {"autograd/__init__.py", "grad", GA_PHASE_BACKWARD},
        {"_tensor.py", "backward", GA_PHASE_BACKWARD},
        {"autograd/graph.py", "_engine_run_backward", GA_PHASE_BACKWARD},
        {"utils/checkpoint.py", "unpack_hook", GA_PHASE_BACKWARD},
        {"utils/checkpoint.py", "unpack_hook_with_error_cb", GA_PHASE_BACKWARD},
        {"utils/checkpoint.py", "recompute_fn", GA_PHASE_BACKWARD},
        {"utils/checkpoint.py", "backward", GA_PHASE_BACKWARD},
        {"optim/adamw.py", "_multi_tensor_adamw", GA_PHASE_OPTIMIZER},
        {"optim/optimizer.py", "zero_grad", GA_PHASE_OPTIMIZER},
        {"optim/lr_scheduler.py", "step", GA_PHASE_OPTIMIZER},
        {"nn/modules/module.py", "zero_grad", GA_PHASE_OPTIMIZER},
        {"nn/modules/module.py", "_call_impl", GA_PHASE_FORWARD},
        {"nn/modules/module.py", "_wrapped_call_impl", GA_PHASE_FORWARD},
        // Not phases: the checkpointed forward, module setup, the hooks' packing.
        {"utils/checkpoint.py", "checkpoint", GA_PHASE_OTHER},
        {"utils/checkpoint.py", "pack_hook", GA_PHASE_OTHER},
        {"nn/modules/module.py", "_apply", GA_PHASE_OTHER},
        {"nn/modules/module.py", "to", GA_PHASE_OTHER},
        {"_tensor.py", "__repr__", GA_PHASE_OTHER},
        {"optimizer.py", "zero_grad", GA_PHASE_OTHER}, // torch/optimizer.py: not under optim/
    };
    for (const auto &c : cases) {
        for (const std::string &root :
             {kTorch, std::string("torch/"), std::string("C:\\venv\\Lib\\site-packages\\torch\\")}) {
            std::string rel = c.rel;
            if (root[0] == 'C')
                for (char &ch : rel)
                    ch = ch == '/' ? '\\' : ch;
            Stack s(GA_STACK_FRAMES, {F(root + rel, 10, c.func), F("train.py", 35, "step")});
            ExpectClass(s.Classify(), Want{GA_SITE_CODE, "train.py:35 step", c.phase}, root + rel + " " + c.func);
        }
    }
}

TEST(SiteFrames, BackwardAndOptimizerFrames)
{
    const std::string t = kTorch;
    Stack g(GA_STACK_FRAMES, {F(t + "autograd/graph.py", 829, "_engine_run_backward"),
                              F(t + "autograd/__init__.py", 496, "grad"), F("train.py", 40, "penalty")});
    ExpectClass(g.Classify(), Want{GA_SITE_CODE, "train.py:40 penalty", GA_PHASE_BACKWARD}, "autograd.grad");
    Stack z(GA_STACK_FRAMES, {F(t + "nn/modules/module.py", 2800, "zero_grad"), F("train.py", 39, "step")});
    ExpectClass(z.Classify(), Want{GA_SITE_CODE, "train.py:39 step", GA_PHASE_OPTIMIZER}, "module zero_grad");
    Stack o(GA_STACK_FRAMES, {F(t + "optim/optimizer.py", 990, "zero_grad"), F("train.py", 39, "step")});
    ExpectClass(o.Classify(), Want{GA_SITE_CODE, "train.py:39 step", GA_PHASE_OPTIMIZER}, "optimizer zero_grad");
    // A bare C++ node frame and the engine's frames.
    Stack a(GA_STACK_FRAMES, {C("at::_ops::add_Tensor::call(at::Tensor const&, at::Tensor const&, c10::Scalar const&)"),
                              C("torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor>&&)"),
                              C("torch::autograd::Engine::evaluate_function(...)")});
    ExpectClass(a.Classify(), Node("AccumulateGrad"), "accumulate grad frame");
    Stack e(GA_STACK_FRAMES,
            {C("at::_ops::empty_strided::call(c10::ArrayRef<c10::SymInt>)"),
             C("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)")});
    ExpectClass(e.Classify(), Want{GA_SITE_OP, "at::_ops::empty_strided", GA_PHASE_BACKWARD}, "engine only");
}

// Whose file is it: a library beside torch is the user's (it names the model's
// layer); torch's installed or checked-out package, code torch generated, and
// the interpreter's own files are not.
TEST(SiteFrames, WhoseFile)
{
    struct {
        const char *file;
        bool user;
    } cases[] = {
        {"train.py", true},
        {"/home/me/proj/train.py", true},
        {"/opt/torch/train.py", true}, // a folder named torch, not torch's package
        {"/usr/lib/python3/dist-packages/transformers/models/llama/modeling_llama.py", true},
        {"/home/me/.venv/lib/python3.12/site-packages/transformers/models/llama/modeling_llama.py", true},
        {"/tmp/ipykernel_4242/1234.py", true},
        {"<stdin>", true},
        {"<ipython-input-3-5a1b>", true},
        {"/home/me/.venv/lib/python3.12/site-packages/torch/nn/modules/module.py", false},
        {"/usr/local/lib/python3.10/dist-packages/torch/_tensor.py", false},
        {"/home/me/.venv/lib/python3.12/site-packages/functorch/_src/vmap.py", false},
        {"/home/me/.venv/lib/python3.12/site-packages/torchgen/model.py", false},
        {"/home/me/src/pytorch/torch/nn/modules/module.py", false}, // a checkout
        {"torch/nn/modules/module.py", false},                      // as the profiler writes torch's files
        {"/tmp/torchinductor_me/ab/cabcdef.py", false},             // torch.compile's generated code
        {"<eval_with_key>.5", false},                               // torch.fx's generated code
        {"/usr/lib/python3.12/threading.py", false},
        {"/opt/conda/lib/python3.10/contextlib.py", false},
        {"/usr/lib64/python3.9/runpy.py", false},
        {"<frozen runpy>", false},
        {"<string>", false},
        {"C:\\Python312\\Lib\\threading.py", false},
        {"C:\\venv\\Lib\\site-packages\\torch\\nn\\modules\\module.py", false},
        {"C:\\venv\\Lib\\site-packages\\transformers\\trainer.py", true},
        {"", false},
    };
    for (const auto &c : cases)
        EXPECT_EQ(ga_site_is_user_file(c.file, std::string(c.file).size()), c.user) << c.file;
    EXPECT_FALSE(ga_site_is_user_file(nullptr, 0));
    // The length counts, not a NUL: cut before its last separator, torch's
    // package folder is only a file's name.
    const std::string p = "/x/site-packages/torch/nn/y.py";
    EXPECT_FALSE(ga_site_is_user_file(p.data(), p.size()));
    EXPECT_TRUE(ga_site_is_user_file(p.data(), p.find("/nn/")));
}

TEST(SiteFrames, LibraryAndCheckoutFrames)
{
    const std::string co = "/home/me/src/pytorch/torch/";
    const std::string lib = "/home/me/.venv/lib/python3.12/site-packages/transformers/models/llama/modeling_llama.py";
    Stack s(GA_STACK_FRAMES, {F(co + "nn/functional.py", 2000, "linear"), F(lib, 312, "forward"),
                              F(co + "nn/modules/module.py", 1520, "_call_impl"), F("train.py", 35, "step")});
    ExpectClass(s.Classify(), Want{GA_SITE_CODE, lib + ":312 forward", GA_PHASE_FORWARD}, "library in a checkout");
    // The interpreter's frames only: the outermost of them; torch's come first.
    Stack th(GA_STACK_FRAMES, {F("/usr/lib/python3.12/threading.py", 1012, "run"),
                               F("/usr/lib/python3.12/threading.py", 1075, "_bootstrap_inner")});
    ExpectClass(th.Classify(),
                Want{GA_SITE_TORCH, "/usr/lib/python3.12/threading.py:1075 _bootstrap_inner", GA_PHASE_OTHER},
                "stdlib");
    const std::string pin = kTorch + "utils/data/_utils/pin_memory.py";
    Stack pm(GA_STACK_FRAMES, {F(pin, 18, "_pin_memory_loop"), F("/usr/lib/python3.12/threading.py", 1012, "run"),
                               F("/usr/lib/python3.12/threading.py", 1075, "_bootstrap_inner")});
    ExpectClass(pm.Classify(), Want{GA_SITE_TORCH, pin + ":18 _pin_memory_loop", GA_PHASE_OTHER}, "pin memory thread");
}

TEST(SiteFrames, NothingToName)
{
    Stack c(GA_STACK_FRAMES, {C("__libc_start_main"), C("_start")});
    ga_site_class_t k = c.Classify();
    ExpectClass(k, Want{GA_SITE_UNKNOWN, "(no Python frame, node or op in the stack)", GA_PHASE_OTHER}, "C only");
    EXPECT_EQ(k.frame, SIZE_MAX);
    // An annotation frame alone names a range.
    Stack a(GA_STACK_FRAMES, {C("_start"), L("Optimizer.step#AdamW.step")});
    ExpectClass(a.Classify(), Want{GA_SITE_RANGE, "Optimizer.step#AdamW.step", GA_PHASE_OPTIMIZER}, "annotation");
    EXPECT_EQ(a.Classify().frame, 1u);
    // A kind the classifier does not know.
    Stack u(GA_STACK_FRAMES, {L("x")});
    const int unknown = 99; // stored as a C caller could: C++ must not load it as the enum
    std::memcpy(&u.st.kind, &unknown, sizeof(unknown));
    ExpectClass(u.Classify(), Want{GA_SITE_UNKNOWN, "(no Python frame, node or op in the stack)", GA_PHASE_OTHER},
                "kind 99");
}

TEST(SiteFrames, NothingRecorded)
{
    const Want none{GA_SITE_NONE, "(no stack recorded)", GA_PHASE_OTHER};
    ga_site_class_t c;
    ga_site_classify(nullptr, &c);
    ExpectClass(c, none, "NULL");
    EXPECT_EQ(c.frame, SIZE_MAX);
    Stack n(GA_STACK_NONE, {F("train.py", 35, "step")});
    ExpectClass(n.Classify(), none, "kind none");
    Stack e(GA_STACK_FRAMES, std::vector<site_test::Frame>{});
    ExpectClass(e.Classify(), none, "no frames");
    Stack r(GA_STACK_RANGES, std::vector<site_test::Frame>{});
    ExpectClass(r.Classify(), none, "no ranges");
}

// A key longer than GA_SITE_KEY_MAX is cut, ending "...", never inside a UTF-8 character.
TEST(SiteFrames, LongKey)
{
    std::string dir = "/home/me/";
    dir += std::string(600, 'd') + "/train.py";
    Stack s(GA_STACK_FRAMES, {F(dir, 35, "step")});
    ga_site_class_t c = s.Classify();
    std::string key = c.key;
    EXPECT_EQ(c.kind, GA_SITE_CODE);
    EXPECT_EQ(key.size(), size_t{GA_SITE_KEY_MAX} - 1);
    EXPECT_EQ(key, dir.substr(0, GA_SITE_KEY_MAX - 4) + "...");
    // "é" is two bytes; 9 + 2 * 250 = 509 puts byte 508 (the cut) inside one.
    std::string wide = "/home/me/";
    for (int i = 0; i < 300; i++)
        wide += "\xc3\xa9";
    Stack w(GA_STACK_FRAMES, {F(wide + ".py", 1, "f")});
    key = w.Classify().key;
    EXPECT_EQ(key, wide.substr(0, 507) + "...");
    // Exactly the longest key that fits is not cut.
    std::string fits = std::string(GA_SITE_KEY_MAX - 1 - 5 - 3, 'f') + ".py";
    Stack x(GA_STACK_FRAMES, {F(fits, 35, "g")}); // + ":35 g"
    key = x.Classify().key;
    EXPECT_EQ(key, fits + ":35 g");
    EXPECT_EQ(key.size(), size_t{GA_SITE_KEY_MAX} - 1);
    // A node's name too.
    Stack n(GA_STACK_RANGES, {L("autograd::engine::evaluate_function: " + std::string(700, 'N') + "Backward0")});
    key = n.Classify().key;
    EXPECT_EQ(key, std::string(GA_SITE_KEY_MAX - 4, 'N') + "...");
}

// ---- the other formats' labels ----

TEST(SiteLabels, Annotation)
{
    struct {
        const char *text;
        ga_phase_t phase;
    } cases[] = {
        {"forward step 3", GA_PHASE_FORWARD}, {"Backward", GA_PHASE_BACKWARD},
        {"BWD:2", GA_PHASE_BACKWARD},         {"  fwd", GA_PHASE_FORWARD},
        {"optimizer", GA_PHASE_OPTIMIZER},    {"Optimizer.step#AdamW.step", GA_PHASE_OPTIMIZER},
        {"optim-7", GA_PHASE_OPTIMIZER},      {"step 8847", GA_PHASE_OTHER},
        {"forwarding", GA_PHASE_OTHER},       {"fw", GA_PHASE_OTHER},
    };
    for (const auto &c : cases) {
        Stack s(GA_STACK_ANNOTATION, {L(c.text)});
        ga_site_class_t k = s.Classify();
        ExpectClass(k, Want{GA_SITE_ANNOTATION, c.text, c.phase}, c.text);
        EXPECT_EQ(k.frame, 0u);
    }
    Stack e(GA_STACK_ANNOTATION, {L("")});
    ExpectClass(e.Classify(), Want{GA_SITE_UNKNOWN, "(no Python frame, node or op in the stack)", GA_PHASE_OTHER},
                "empty annotation");
}

TEST(SiteLabels, AllocatorAndThread)
{
    Stack a(GA_STACK_ALLOCATOR, {L("DEVICE_POOL")});
    ExpectClass(a.Classify(), Want{GA_SITE_ALLOCATOR, "DEVICE_POOL", GA_PHASE_OTHER}, "allocator");
    Stack n(GA_STACK_ALLOCATOR, {L("DEVICE_POOL"), L("weights")});
    ExpectClass(n.Classify(), Want{GA_SITE_ALLOCATOR, "DEVICE_POOL: weights", GA_PHASE_OTHER}, "named allocation");
    Stack u(GA_STACK_ALLOCATOR, {L("DEVICE_POOL"), L("")});
    ExpectClass(u.Classify(), Want{GA_SITE_ALLOCATOR, "DEVICE_POOL", GA_PHASE_OTHER}, "unnamed allocation");
    Stack t(GA_STACK_THREAD, {L("thread 140213")});
    ga_site_class_t k = t.Classify();
    ExpectClass(k, Want{GA_SITE_THREAD, "thread 140213", GA_PHASE_OTHER}, "thread");
    EXPECT_EQ(k.frame, 0u);
}

TEST(SiteLabels, SpecialAndNames)
{
    ga_site_class_t c;
    ga_site_special(GA_SITE_BEFORE, &c);
    ExpectClass(c, Want{GA_SITE_BEFORE, "(allocated before the trace)", GA_PHASE_OTHER}, "before");
    EXPECT_EQ(c.frame, SIZE_MAX);
    ga_site_special(GA_SITE_OVERFLOW, &c);
    ExpectClass(c, Want{GA_SITE_OVERFLOW, "(more distinct owners than the index holds)", GA_PHASE_OTHER}, "overflow");
    ga_site_special(GA_SITE_NONE, &c);
    ExpectClass(c, Want{GA_SITE_NONE, "(no stack recorded)", GA_PHASE_OTHER}, "none");
    ga_site_special(GA_SITE_CODE, &c); // not a special kind
    EXPECT_EQ(c.kind, GA_SITE_UNKNOWN);

    const char *phases[] = {"other", "forward", "backward", "optimizer"};
    for (int p = 0; p < GA_PHASES; p++)
        EXPECT_STREQ(ga_phase_name(static_cast<ga_phase_t>(p)), phases[p]);
    EXPECT_STREQ(ga_phase_name(static_cast<ga_phase_t>(GA_PHASES)), "?");
    const char *kinds[] = {
        "code", "autograd node",    "op",      "torch", "range", "annotation", "allocator", "thread", "unknown",
        "none", "before the trace", "overflow"};
    for (int k = GA_SITE_CODE; k <= GA_SITE_OVERFLOW; k++)
        EXPECT_STREQ(ga_site_kind_name(static_cast<ga_site_kind_t>(k)), kinds[k]);
    EXPECT_STREQ(ga_site_kind_name(static_cast<ga_site_kind_t>(GA_SITE_OVERFLOW + 1)), "?");
}

} // namespace
