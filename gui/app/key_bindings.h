// gui/key_bindings.h — the viewer's keys, in one table: what each key does and what the `?`
// window says about it. The mouse gestures of the views are rows of the same table (with no
// key), so the help lists everything in one place and in one order.
// Threads: UI thread only (no state).
#pragma once

#include <string>
#include <vector>

#include "backend.h"

namespace ringside::gui {

enum class KeyAction {
  kZoomIn,
  kZoomOut,
  kPanLeft,
  kPanRight,
  kFit,
  kUndo,
  kRedo,
  kToggleTheme,
  kToggleHelp,
  kFocusSearch,
  kSearchStep,         // next match (previous with Shift)
  kSearchStepIfQuery,  // the same, when the search box holds a query
  kEscape,             // close the help, else clear the selection and the selected range
  kQuit,
};

// A character as typed (keyboard-layout independent; ignored while Ctrl is held) or a key as
// Backend::takeKeyPresses() reports it ('A'..'Z' or KeyPress::kUp, ...).
struct KeyChord {
  enum class Kind { kChar, kKey };
  Kind kind = Kind::kChar;
  int code = 0;
  bool ctrl = false;          // keys: only with Ctrl held
  bool while_typing = false;  // keys: also while the search box has the keyboard
};

struct KeyBinding {
  KeyChord chord;
  KeyAction action;
};

// One line of the help: the keys as the help names them, what they do, and the bindings that
// line stands for (none for the views' mouse gestures).
struct KeyHelpRow {
  const char* keys;
  const char* help;
  std::vector<KeyBinding> bindings;
};

const std::vector<KeyHelpRow>& keyTable();

// The `?` window's text: one line per row of keyTable(), the help in a column.
std::string keyHelpText();

struct KeyEvent {
  KeyAction action;
  bool shift = false;  // for kSearchStep*: backwards
};

// A frame's typed characters, then its key presses, as actions in that order. `typing`: a text
// box has the keyboard; `ctrl_held`: Ctrl is down (typed characters then mean nothing).
std::vector<KeyEvent> keyEvents(const std::vector<unsigned>& chars,
                                const std::vector<KeyPress>& keys, bool typing, bool ctrl_held);

}  // namespace ringside::gui
