// cli/view_cmd.h — `ringside view`: starts the desktop viewer.
//
// The viewer is its own executable (ringside-view, built from gui/ when
// RINGSIDE_GUI is on and GLFW, ImGui and OpenGL are found), so this CLI never
// links OpenGL. `ringside view ARGS` execs <bindir>/ringside-view ARGS.
#pragma once

#include <span>
#include <string>

namespace ringside::cli {

int runView(std::span<const std::string> args);

}  // namespace ringside::cli
