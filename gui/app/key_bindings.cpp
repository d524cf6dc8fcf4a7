#include "key_bindings.h"

#include <algorithm>

namespace ringside::gui {
namespace {

constexpr size_t kKeysColumn = 19;  // where the help text starts on each line

KeyBinding typed(char c, KeyAction action) {
  return {{KeyChord::Kind::kChar, c, false, false}, action};
}
KeyBinding key(int code, KeyAction action) {
  return {{KeyChord::Kind::kKey, code, false, false}, action};
}
KeyBinding ctrl(char letter, KeyAction action) {
  return {{KeyChord::Kind::kKey, letter, true, false}, action};
}
// Keys that work while the search box has the keyboard too.
KeyBinding always(KeyBinding b) {
  b.chord.while_typing = true;
  return b;
}

}  // namespace

const std::vector<KeyHelpRow>& keyTable() {
  using A = KeyAction;
  static const std::vector<KeyHelpRow> kTable = {
      {"mouse wheel", "zoom at the cursor", {}},
      {"drag", "pan", {}},
      {"right-drag", "zoom to the dragged range", {}},
      {"shift-drag", "select a range: counts, sums, min/mean/max/p50/p99", {}},
      {"W / S, Up / Down",
       "zoom in / out",
       {typed('w', A::kZoomIn), typed('s', A::kZoomOut), key(KeyPress::kUp, A::kZoomIn),
        key(KeyPress::kDown, A::kZoomOut)}},
      {"A / D, Left/Right",
       "pan left / right",
       {typed('a', A::kPanLeft), typed('d', A::kPanRight), key(KeyPress::kLeft, A::kPanLeft),
        key(KeyPress::kRight, A::kPanRight)}},
      {"F", "fit the whole trace", {typed('f', A::kFit), typed('F', A::kFit)}},
      {"Ctrl+Z, U, Bksp",
       "undo the view range",
       {ctrl('Z', A::kUndo), typed('u', A::kUndo), key(KeyPress::kBackspace, A::kUndo)}},
      {"Ctrl+Y, R", "redo", {ctrl('Y', A::kRedo), typed('r', A::kRedo)}},
      {"Ctrl+F, /",
       "search (op:allreduce size>1M rank:2 straggler:3 failed ...)",
       {always(ctrl('F', A::kFocusSearch)), typed('/', A::kFocusSearch)}},
      {"Enter, F3",
       "next match; Shift+F3 previous",
       {key(KeyPress::kEnter, A::kSearchStepIfQuery), always(key(KeyPress::kF3, A::kSearchStep))}},
      {"T", "dark / light theme", {typed('t', A::kToggleTheme)}},
      {"click", "select a collective (on every rank; details at the right)", {}},
      {"click a lane name", "fold / unfold it; right-click: hide or pin it", {}},
      {"click a finding", "select and zoom to what it names", {}},
      {"?", "this help", {typed('?', A::kToggleHelp)}},
      {"Esc", "close help / clear selection and range", {key(KeyPress::kEscape, A::kEscape)}},
      {"Ctrl+Q", "quit", {always(ctrl('Q', A::kQuit))}},
  };
  return kTable;
}

std::string keyHelpText() {
  std::string out;
  for (const KeyHelpRow& row : keyTable()) {
    if (!out.empty()) out += '\n';
    const std::string keys = row.keys;
    out += keys + std::string(kKeysColumn - std::min(keys.size(), kKeysColumn - 1), ' ') + row.help;
  }
  return out;
}

std::vector<KeyEvent> keyEvents(const std::vector<unsigned>& chars,
                                const std::vector<KeyPress>& keys, bool typing, bool ctrl_held) {
  std::vector<KeyEvent> out;
  if (!typing && !ctrl_held) {
    for (unsigned c : chars) {
      for (const KeyHelpRow& row : keyTable()) {
        for (const KeyBinding& b : row.bindings) {
          if (b.chord.kind == KeyChord::Kind::kChar && static_cast<unsigned>(b.chord.code) == c) {
            out.push_back({b.action});
          }
        }
      }
    }
  }
  for (const KeyPress& k : keys) {
    for (const KeyHelpRow& row : keyTable()) {
      for (const KeyBinding& b : row.bindings) {
        const KeyChord& chord = b.chord;
        if (chord.kind != KeyChord::Kind::kKey || chord.code != k.key) continue;
        if ((chord.ctrl && !k.ctrl) || (typing && !chord.while_typing)) continue;
        out.push_back({b.action, k.shift});
      }
    }
  }
  return out;
}

}  // namespace ringside::gui
