// analyzer/topology.cpp — reading a topology file for the analyzer: fileio's rule for
// configuration files, then collective/'s one parser (docs/topology.md).
#include "ringside/analyzer/topology.h"

#include "ringside/fileio/input_file.h"

namespace ringside::analyzer {

bool parseTopology(const std::string& text, const std::string& name, Topology* out, std::string* error) {
  collective::TopologyError why;
  if (collective::parseTopology(text, out, &why)) return true;
  *error = name + (why.line > 0 ? ":" + std::to_string(why.line) : std::string()) + ": " + why.what;
  return false;
}

bool loadTopology(const std::string& path, Topology* out, std::string* error) {
  // fileio's rule for configuration files: never blocks on a FIFO, only a regular file, bounded.
  std::string text;
  return fileio::readConfigFile(path, kMaxTopologyFileBytes, "topology file", &text, error) &&
         parseTopology(text, path, out, error);
}

}  // namespace ringside::analyzer
