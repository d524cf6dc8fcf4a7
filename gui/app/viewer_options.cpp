// The command line of ringside-view (viewer_app.h): its help and its parser.
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <functional>
#include <iterator>

#include "ringside/format/units.h"
#include "viewer_app.h"

namespace ringside::gui {
namespace {

bool parseInt(const std::string& s, int lo, int hi, int* out) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// "1.5ms", "200us", "3s", "42" (ns) -> ns: format/'s duration grammar, bare numbers in ns.
bool parseTime(const std::string& s, double* ns) {
  return format::parseDuration(s, format::BareDuration::kNanoseconds, ns);
}

// Options whose value is taken as it is.
struct TextOption {
  const char* name;
  std::string ViewerOptions::*field;
};
constexpr TextOption kTextOptions[] = {
    {"--screenshot", &ViewerOptions::screenshot}, {"--topology", &ViewerOptions::topology},
    {"--export-csv", &ViewerOptions::export_csv}, {"--dump-layout", &ViewerOptions::dump_layout},
    {"--state-out", &ViewerOptions::state_out},   {"--search", &ViewerOptions::search},
};

bool parseSize(const std::string& value, ViewerOptions* out) {
  size_t x = value.find('x');
  return x != std::string::npos && parseInt(value.substr(0, x), 64, 16384, &out->width) &&
         parseInt(value.substr(x + 1), 64, 16384, &out->height);
}

bool parseRange(ViewerOptions* out) {
  double t0 = 0, t1 = 0;
  size_t colon = out->range.find(':');
  if (colon == std::string::npos || !parseTime(out->range.substr(0, colon), &t0) ||
      !parseTime(out->range.substr(colon + 1), &t1) || t1 <= t0) {
    return false;
  }
  out->range_start_ns = t0;
  out->range_end_ns = t1;
  return true;
}

bool parseScrub(const std::string& value, ViewerOptions* out) {
  char* end = nullptr;
  out->scrub = std::strtod(value.c_str(), &end);
  return !value.empty() && *end == '\0' && out->scrub >= 0 && out->scrub <= 1;
}

// One option `a` (not -h); `need` fetches its value. Returns 0, or 2 with *error set.
int parseOption(const std::string& a, const std::function<bool(std::string*)>& need,
                ViewerOptions* out, std::string* error) {
  for (const TextOption& o : kTextOptions) {
    if (a == o.name) return need(&(out->*o.field)) ? 0 : 2;
  }
  std::string value;
  auto fail = [&](const char* message) {
    *error = message;
    return 2;
  };
  if (a == "--frames") {
    if (!need(&value) || !parseInt(value, 1, 100000, &out->frames))
      return fail("--frames: expected a count >= 1");
  } else if (a == "--size") {
    if (!need(&value)) return 2;
    if (!parseSize(value, out)) return fail("--size: expected WxH, e.g. 1280x800");
  } else if (a == "--view") {
    if (!need(&out->view)) return 2;
    out->view_given = true;
    if (out->view != "timeline" && out->view != "topology" && out->view != "matrix" &&
        out->view != "stats" && out->view != "compare") {
      return fail("--view: expected timeline, topology, matrix, stats or compare");
    }
  } else if (a == "--select") {
    if (!need(&value) || !parseInt(value, 0, 1 << 30, &out->select)) {
      return fail("--select: expected a collective number >= 0");
    }
  } else if (a == "--range") {
    if (!need(&out->range)) return 2;
    if (!parseRange(out))
      return fail("--range: expected START:END with END > START, e.g. 1ms:2.5ms");
  } else if (a == "--scrub") {
    if (!need(&value)) return 2;
    if (!parseScrub(value, out)) return fail("--scrub: expected a position from 0 to 1");
  } else if (a == "--light") {
    out->light = true;
  } else {
    *error = "unknown option '" + a + "'";
    return 2;
  }
  return 0;
}

}  // namespace

std::string viewerHelp() {
  return "Usage: ringside view [options] TRACE.sqlite [TRACE_B.sqlite]\n"
         "\n"
         "Opens a window with the trace's timeline: a lane per rank (collectives and their phases)\n"
         "and per directed link (bytes/s). With two traces: A/B compare (both timelines on one\n"
         "zoom, the diff table, findings). Press ? in the window for the keys.\n"
         "\n"
         "Options:\n"
         "  --screenshot FILE.png  render --frames frames off screen, write FILE.png, exit\n"
         "  --frames N             frames before the screenshot (default 3)\n"
         "  --size WxH             window size (default 1280x800)\n"
         "  --view NAME            timeline, topology, matrix, stats, or compare (the default with\n"
         "                         two traces)\n"
         "  --topology FILE        machines and links (docs/topology.md): layout and idle links\n"
         "  --export-csv FILE      write the --view's table (stats, or matrix) as CSV; without\n"
         "                         --screenshot no window is opened\n"
         "  --dump-layout FILE     with --screenshot: the topology view's geometry as JSON\n"
         "  --scrub POS            topology view: scrubber on at POS (0..1) over the selection\n"
         "  --select N             select collective N (0 = the first to start) and show its details\n"
         "  --range START:END      show and select this time range from the trace start (e.g. 1ms:2.5ms)\n"
         "  --search QUERY         search collectives (op:allreduce size>1M rank:2 ...), select the first\n"
         "  --state-out FILE.json  write the view range, selection, hover, ... (on change and at exit)\n"
         "  --light                light theme\n"
         "  -h, --help             this help\n";
}

int parseViewerArgs(const std::vector<std::string>& args, ViewerOptions* out, std::string* error) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i], value;
    bool has_inline = false;
    if (a.starts_with("--") && a.find('=') != std::string::npos) {
      value = a.substr(a.find('=') + 1);
      a = a.substr(0, a.find('='));
      has_inline = true;
    }
    auto need = [&](std::string* v) {
      if (has_inline) {
        *v = value;
        return true;
      }
      if (i + 1 >= args.size()) {
        *error = a + " needs a value";
        return false;
      }
      *v = args[++i];
      return true;
    };
    if (a == "-h" || a == "--help") {
      *error = viewerHelp();
      return -1;
    }
    if (!a.starts_with("-") || a == "-") {
      out->traces.push_back(a);
    } else if (int rc = parseOption(a, need, out, error); rc != 0) {
      return rc;
    }
  }
  if (out->traces.empty() || out->traces.size() > 2) {
    *error = "expected TRACE.sqlite, or two traces to compare";
    return 2;
  }
  if (!out->view_given && out->traces.size() == 2) out->view = "compare";
  if (out->view == "compare" && out->traces.size() != 2) {
    *error = "--view compare needs two traces: A.sqlite B.sqlite";
    return 2;
  }
  return 0;
}

}  // namespace ringside::gui
