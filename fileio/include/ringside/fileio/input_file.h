// ringside/fileio/input_file.h — reading the product's own configuration files, and telling
// whether an output would replace an input.
//
// A configuration file (a topology file, ...) names a path the user or the environment gives:
// it may be a FIFO (open() would wait for a writer for ever), /dev/zero or a terminal (read()
// would never end), a folder or a huge file. readConfigFile opens it with
// O_RDONLY|O_NONBLOCK|O_CLOEXEC (opening a FIFO never waits), checks with fstat that it is a
// regular file, and reads at most max_bytes (one byte more is refused, so a file that grows
// while it is read is refused too). Errors are one line naming the path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringside::fileio {

// The whole file at `path` into *text. `what` names the file in messages ("topology file"):
// "<path>: not a regular file (a FIFO); a topology file must be one",
// "<path>: 20000000 bytes; a topology file may have at most 16 MiB", "<path>: cannot open: ...".
bool readConfigFile(const std::string& path, uint64_t max_bytes, const std::string& what,
                    std::string* text, std::string* error);

// Whether `output` (when it exists, links followed) is the same file (device and inode) as one
// of `inputs`, or as a file directly inside an input that is a folder (or inside its
// node-<digits> folders, as `merge DIR` reads them). A hard link or a symbolic link to an input
// is that input. True with *error = "<output>: is the input <input>; an output never replaces
// its input (choose another name)"; false when the output may be written ("-" and "" are
// standard output, never an input).
bool outputIsAnInput(const std::string& output, const std::vector<std::string>& inputs,
                     std::string* error);

}  // namespace ringside::fileio
