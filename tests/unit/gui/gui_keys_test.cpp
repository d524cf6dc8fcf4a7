// The viewer's keys (gui/app/key_bindings.h): the help text the ? window shows, and the actions
// typed characters and key presses map to.
#include <gtest/gtest.h>

#include "key_bindings.h"

namespace ringside::gui {
namespace {

std::vector<KeyAction> actions(const std::vector<KeyEvent>& events) {
  std::vector<KeyAction> out;
  for (const KeyEvent& e : events) out.push_back(e.action);
  return out;
}

KeyPress press(int key, bool ctrl = false, bool shift = false) {
  KeyPress k;
  k.key = key;
  k.ctrl = ctrl;
  k.shift = shift;
  return k;
}

TEST(KeysTest, HelpTextFromTheTable) {
  EXPECT_EQ(keyHelpText(),
            "mouse wheel        zoom at the cursor\n"
            "drag               pan\n"
            "right-drag         zoom to the dragged range\n"
            "shift-drag         select a range: counts, sums, min/mean/max/p50/p99\n"
            "W / S, Up / Down   zoom in / out\n"
            "A / D, Left/Right  pan left / right\n"
            "F                  fit the whole trace\n"
            "Ctrl+Z, U, Bksp    undo the view range\n"
            "Ctrl+Y, R          redo\n"
            "Ctrl+F, /          search (op:allreduce size>1M rank:2 straggler:3 failed ...)\n"
            "Enter, F3          next match; Shift+F3 previous\n"
            "T                  dark / light theme\n"
            "click              select a collective (on every rank; details at the right)\n"
            "click a lane name  fold / unfold it; right-click: hide or pin it\n"
            "click a finding    select and zoom to what it names\n"
            "?                  this help\n"
            "Esc                close help / clear selection and range\n"
            "Ctrl+Q             quit");
}

TEST(KeysTest, TypedCharactersThenKeys) {
  using A = KeyAction;
  EXPECT_EQ(actions(keyEvents({'w', 's', 'a', 'd', 'f', 'F', 'u', 'r', 't', '?', '/', 'x'}, {},
                              false, false)),
            (std::vector<A>{A::kZoomIn, A::kZoomOut, A::kPanLeft, A::kPanRight, A::kFit, A::kFit,
                            A::kUndo, A::kRedo, A::kToggleTheme, A::kToggleHelp, A::kFocusSearch}));
  EXPECT_EQ(
      actions(keyEvents({'w'},
                        {press(KeyPress::kUp), press(KeyPress::kDown), press(KeyPress::kLeft),
                         press(KeyPress::kRight), press(KeyPress::kBackspace)},
                        false, false)),
      (std::vector<A>{A::kZoomIn, A::kZoomIn, A::kZoomOut, A::kPanLeft, A::kPanRight, A::kUndo}));
}

TEST(KeysTest, CtrlChords) {
  using A = KeyAction;
  EXPECT_TRUE(
      keyEvents({}, {press('Z'), press('Y'), press('Q'), press('F')}, false, false).empty());
  EXPECT_EQ(actions(keyEvents(
                {}, {press('Z', true), press('Y', true), press('F', true), press('Q', true)}, false,
                false)),
            (std::vector<A>{A::kUndo, A::kRedo, A::kFocusSearch, A::kQuit}));
  // Characters typed with Ctrl held mean nothing.
  EXPECT_TRUE(keyEvents({'w', 'f'}, {}, false, true).empty());
}

TEST(KeysTest, WhileTypingInTheSearchBox) {
  using A = KeyAction;
  const std::vector<KeyEvent> e = keyEvents(
      {'w', '?'},
      {press(KeyPress::kEnter), press(KeyPress::kEscape), press(KeyPress::kUp),
       press(KeyPress::kF3, false, true), press('F', true), press('Q', true), press('Z', true)},
      true, false);
  EXPECT_EQ(actions(e), (std::vector<A>{A::kSearchStep, A::kFocusSearch, A::kQuit}));
  EXPECT_TRUE(e[0].shift);  // Shift+F3: backwards
  const std::vector<KeyEvent> enter =
      keyEvents({}, {press(KeyPress::kEnter, false, true)}, false, false);
  ASSERT_EQ(actions(enter), (std::vector<A>{A::kSearchStepIfQuery}));
  EXPECT_TRUE(enter[0].shift);
  EXPECT_EQ(actions(keyEvents({}, {press(KeyPress::kEscape)}, false, false)),
            (std::vector<A>{A::kEscape}));
}

}  // namespace
}  // namespace ringside::gui
