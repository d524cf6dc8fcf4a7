#include "nccl_log.h"

#include <fcntl.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace ringside::interpose::nccl_log {
namespace {

constexpr size_t kMaxLineBytes = size_t{1} << 20;

// "host:pid:tid [dev] NCCL INFO <text>" → pid, tid, text.
bool split(const std::string& line, long* pid, long* tid, std::string* text) {
  size_t info = line.find(" NCCL INFO ");
  if (info == std::string::npos) return false;
  size_t c2 = line.rfind(':', line.find(' '));
  if (c2 == std::string::npos || c2 == 0) return false;
  size_t c1 = line.rfind(':', c2 - 1);
  if (c1 == std::string::npos) return false;
  *pid = std::strtol(line.c_str() + c1 + 1, nullptr, 10);
  *tid = std::strtol(line.c_str() + c2 + 1, nullptr, 10);
  *text = line.substr(info + 11);
  return true;
}

std::string squeeze(const std::string& s) {
  std::istringstream in(s);
  std::string w, out;
  while (in >> w) out += (out.empty() ? "" : " ") + w;
  return out;
}

}  // namespace

bool Parser::feed(const std::string& line) {
  long pid = 0, tid = 0;
  std::string text;
  if (!split(line, &pid, &tid, &text) || pid != pid_) return false;
  // "Channel 00/02 :    0   1   2   3" → "ring 0: 0 1 2 3"
  int c = -1, n = -1;
  if (std::sscanf(text.c_str(), "Channel %d/%d :", &c, &n) == 2) {
    size_t colon = text.find(':');
    std::string ranks = squeeze(text.substr(colon + 1));
    // "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC" lines describe one edge, not a ring.
    if (!ranks.empty() && ranks.find("->") == std::string::npos && ranks.find('[') == std::string::npos)
      pending_.emplace_back(tid, "ring " + std::to_string(c) + ": " + ranks);
    return false;
  }
  // "Trees [0] 1/-1/-1->0->-1 [1] -1/-1/-1->0->1" → "tree 0: 1/-1/-1->0->-1", ...
  if (text.compare(0, 6, "Trees ") == 0) {
    std::istringstream in(text.substr(6));
    std::string tok;
    int ch = -1;
    while (in >> tok) {
      if (tok.size() > 2 && tok.front() == '[' && tok.back() == ']') {
        ch = std::atoi(tok.c_str() + 1);
      } else if (ch >= 0 && tok.find("->") != std::string::npos) {
        pending_.emplace_back(tid, "tree " + std::to_string(ch) + ": " + tok);
        ch = -1;
      }
    }
    return false;
  }
  size_t id = text.find("commId 0x");
  if (id != std::string::npos && text.find("Init COMPLETE") != std::string::npos) {
    done_ = CommTopology{};
    done_.comm_id = std::strtoull(text.c_str() + id + 9, nullptr, 16);
    size_t cp = text.find(" comm 0x");
    if (cp != std::string::npos) done_.comm = std::strtoull(text.c_str() + cp + 8, nullptr, 16);
    std::vector<std::pair<long, std::string>> rest;
    for (auto& p : pending_) {
      if (p.first == tid)
        done_.lines.push_back(std::move(p.second));
      else
        rest.push_back(std::move(p));
    }
    pending_.swap(rest);
    return true;
  }
  return false;
}

CommTopology Parser::take() { return std::move(done_); }

std::string debugFilePath() {
  const char* level = std::getenv("NCCL_DEBUG");
  const char* file = std::getenv("NCCL_DEBUG_FILE");
  if (level == nullptr || file == nullptr || file[0] == '\0') return "";
  if (strcasecmp(level, "INFO") != 0 && strcasecmp(level, "TRACE") != 0) return "";
  std::string out;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  for (const char* p = file; *p != '\0'; ++p) {
    if (p[0] == '%' && p[1] == 'h') {
      out += host;
      ++p;
    } else if (p[0] == '%' && p[1] == 'p') {
      out += std::to_string(getpid());
      ++p;
    } else {
      out += *p;
    }
  }
  return out;
}

std::vector<CommTopology> readNew(const std::string& path, long pid, long* offset, Parser* parser) {
  (void)pid;
  std::vector<CommTopology> out;
  // NCCL_DEBUG_FILE comes from the job's environment: a FIFO there must not block the job in
  // open(), and /dev/zero or a terminal must not be read (only a regular file is).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return out;
  struct stat sb {};
  if (::fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    ::close(fd);
    return out;
  }
  FILE* f = ::fdopen(fd, "r");
  if (f == nullptr) {
    ::close(fd);
    return out;
  }
  if (std::fseek(f, *offset, SEEK_SET) != 0) {
    std::fclose(f);
    return out;
  }
  char buf[4096];
  std::string line;
  long consumed = *offset;
  while (std::fgets(buf, sizeof buf, f) != nullptr) {
    line += buf;
    if (line.empty() || line.back() != '\n') {
      if (std::feof(f)) break;  // a line still being written: read it next time
      if (line.size() > kMaxLineBytes) {  // no NCCL line is this long: skipped, memory bounded
        consumed += static_cast<long>(line.size());
        line.clear();
      }
      continue;
    }
    consumed += static_cast<long>(line.size());
    line.pop_back();
    if (parser->feed(line)) out.push_back(parser->take());
    line.clear();
  }
  *offset = consumed;
  std::fclose(f);
  return out;
}

}  // namespace ringside::interpose::nccl_log
