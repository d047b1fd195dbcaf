// site_util.h: recorded stacks for site_test: one built by hand (frames with
// a file, a line and a name, or a name only), or one of the real stacks of a
// PyTorch 2.11 snapshot (data/stacks/, written by extract_stacks.py), seen
// whole or with some frames dropped; each offered as a ga_stack_t.
#ifndef GA_TESTS_TOOLS_SITE_UTIL_H
#define GA_TESTS_TOOLS_SITE_UTIL_H

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" {
#include "tools/owners/site.h"
}

namespace site_test {

struct Frame {
    bool has_file = false; // false: a name only (NULL file), as an annotation or a range
    std::string file;
    int64_t line = 0;
    std::string name;
};

// A frame with a file ("" is a C++ frame's empty one).
inline Frame F(const std::string &file, int64_t line, const std::string &name)
{
    return Frame{true, file, line, name};
}

// A frame with a name only.
inline Frame L(const std::string &name)
{
    return Frame{false, "", 0, name};
}

// A C++ frame as a snapshot records it ("??", line 0).
inline Frame C(const std::string &name)
{
    return F("??", 0, name);
}

// frames (innermost first) as a ga_stack_t of kind, with or without keys.
struct Stack {
    std::vector<const Frame *> frames;
    std::vector<Frame> own;
    ga_stack_t st = {};

    static void frame_of(const void *data, size_t i, ga_frame_t *out)
    {
        const Frame *f = static_cast<const Stack *>(data)->frames.at(i);
        out->file = f->has_file ? f->file.data() : nullptr;
        out->file_len = f->has_file ? f->file.size() : 0;
        out->name = f->name.data();
        out->name_len = f->name.size();
        out->line = f->line;
    }
    static uintptr_t key_of(const void *data, size_t i)
    {
        return reinterpret_cast<uintptr_t>(static_cast<const Stack *>(data)->frames.at(i));
    }

    Stack(ga_stack_kind_t kind, std::vector<Frame> fr, bool keys = true) : own(std::move(fr))
    {
        for (const Frame &f : own)
            frames.push_back(&f);
        init(kind, keys);
    }
    Stack(ga_stack_kind_t kind, std::vector<const Frame *> fr, bool keys) : frames(std::move(fr)) { init(kind, keys); }
    Stack(const Stack &) = delete;
    Stack &operator=(const Stack &) = delete;

    void init(ga_stack_kind_t kind, bool keys)
    {
        st.kind = kind;
        st.n = frames.size();
        st.data = this;
        st.frame = frame_of;
        st.key = keys ? key_of : nullptr;
    }
    ga_site_class_t Classify() const
    {
        ga_site_class_t c;
        ga_site_classify(&st, &c);
        return c;
    }
};

// The fixture: the snapshot's distinct frames and its stacks (frame ids,
// innermost first), as extract_stacks.py writes them.
struct Fixture {
    std::vector<Frame> frames;
    std::vector<std::vector<size_t>> stacks;
    std::vector<std::string> actions; // alloc or oom
    std::string error;

    static std::string Path(const std::string &name)
    {
        const char *srcdir = std::getenv("TEST_SRCDIR");
        const char *ws = std::getenv("TEST_WORKSPACE");
        std::string dir = srcdir != nullptr && ws != nullptr ? std::string(srcdir) + "/" + ws + "/" : "";
        return dir + "tests/tools/data/stacks/" + name;
    }

    static std::vector<std::string> Fields(const std::string &line)
    {
        std::vector<std::string> out;
        size_t b = 0;
        for (size_t e; (e = line.find('\t', b)) != std::string::npos; b = e + 1)
            out.push_back(line.substr(b, e - b));
        out.push_back(line.substr(b));
        return out;
    }

    explicit Fixture(const std::string &name)
    {
        std::ifstream in(Path(name));
        if (!in) {
            error = "cannot open " + Path(name);
            return;
        }
        std::string line;
        for (size_t no = 1; std::getline(in, line); no++) {
            if (line.empty() || line[0] == '#')
                continue;
            std::vector<std::string> f = Fields(line);
            if (f[0] == "f" && f.size() == 5 && std::stoul(f[1]) == frames.size()) {
                bool none = f[3] == "-"; // the script's "no file": an annotation
                frames.push_back(Frame{!none, none ? "" : f[3], std::stoll(f[2]), f[4]});
            } else if (f[0] == "s" && f.size() == 5 && std::stoul(f[1]) == stacks.size()) {
                std::vector<size_t> ids;
                std::istringstream s(f[4]);
                for (size_t id; s >> id;)
                    ids.push_back(id);
                for (size_t id : ids)
                    if (id >= frames.size())
                        error = name + ":" + std::to_string(no) + ": frame " + std::to_string(id) + " unknown";
                stacks.push_back(ids);
                actions.push_back(f[3]);
            } else {
                error = name + ":" + std::to_string(no) + ": not a frame or a stack";
                return;
            }
        }
    }
};

// Which frames of a real stack a view keeps.
enum class View {
    All,      // as recorded (stacks="all": C++ and Python frames, then annotations)
    Python,   // as stacks="python" records it: no C++ frames
    Cpp,      // no Python frames
    NoScript, // no frame of the script that recorded it (capture_torch_snapshot.py)
};

inline bool Keeps(View v, const Frame &f)
{
    bool python = f.line > 0;
    bool cpp = f.has_file && !python;
    static const std::string script = "capture_torch_snapshot.py";
    switch (v) {
    case View::All: return true;
    case View::Python: return !cpp;
    case View::Cpp: return !python;
    case View::NoScript:
        return !(f.file.size() >= script.size() &&
                 f.file.compare(f.file.size() - script.size(), script.size(), script) == 0);
    }
    return true;
}

// Stack i of fx seen through v, as a ga_stack_t of kind GA_STACK_FRAMES.
struct RealStack : Stack {
    RealStack(const Fixture &fx, size_t i, View v, bool keys = true) : Stack(GA_STACK_FRAMES, Pick(fx, i, v), keys) {}
    static std::vector<const Frame *> Pick(const Fixture &fx, size_t i, View v)
    {
        std::vector<const Frame *> out;
        for (size_t id : fx.stacks.at(i))
            if (Keeps(v, fx.frames[id]))
                out.push_back(&fx.frames[id]);
        return out;
    }
};

} // namespace site_test

#endif // GA_TESTS_TOOLS_SITE_UTIL_H
