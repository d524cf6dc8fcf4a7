// cli/common/output_folder.h — folders ringside writes into (rank folders of record and bench,
// report's CSV folder), made without following a link planted in their place.
#pragma once

#include <filesystem>
#include <string>
#include <system_error>

namespace ringside::cli {

// Makes a rank folder (record, bench): private (0700) unless RINGSIDE_SHARE, since it holds
// rank files; its parents get the umask's mode. True when this call made it; false with *ec
// clear when it existed already.
// The last component is made and opened relative to its parent, never through a symbolic link:
// a link there (planted at `<out>.ranks` or `<dir>/node-K`) gives *ec = ELOOP, a file ENOTDIR.
bool makeRankFolder(const std::filesystem::path& dir, std::error_code* ec);
// One line for a makeRankFolder failure ("cannot write rank files to DIR: ...").
std::string rankFolderError(const std::string& dir, const std::error_code& ec);

}  // namespace ringside::cli
