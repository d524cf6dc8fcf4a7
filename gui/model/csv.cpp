#include "ringside/storage/privacy.h"
#include "ringside/gui/csv.h"

#include "ringside/fileio/output_file.h"

namespace ringside::gui {

bool writeTextFile(const std::string& path, const std::string& text, std::string* error) {
  if (path.empty()) {
    *error = "no file name given";
    return false;
  }
  // Replaces an earlier file (as always), but only a regular one, never through a link.
  return fileio::writeOutputFile(path, text, /*overwrite=*/true, error, /*sync=*/true,
                                 storage::outputFileMode());
}

}  // namespace ringside::gui
