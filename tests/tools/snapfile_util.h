// snapfile_util.h: a snapshot file opened for a test (tools/snapshot/snapfile.h),
// closed at the end of the scope.
#pragma once

#include <gtest/gtest.h>

#include <string>

extern "C" {
#include "tools/snapshot/snapfile.h"
}

struct SnapFile {
    ga_snapfile_t *f = nullptr;
    std::string error;
    explicit SnapFile(const std::string &path)
    {
        char err[512] = "";
        if (ga_snapfile_open(path.c_str(), &f, err, sizeof err) != 0)
            error = err;
    }
    ~SnapFile() { ga_snapfile_close(f); }
    SnapFile(const SnapFile &) = delete;
    SnapFile &operator=(const SnapFile &) = delete;
    // The parsed snapshot, NULL when the file could not be read (error says why).
    const ga_torch_snapshot_t *snap() const { return f != nullptr ? ga_snapfile_snapshot(f) : nullptr; }
};
