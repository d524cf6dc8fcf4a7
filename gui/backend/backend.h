// gui/backend.h — the one place that knows about GLFW and OpenGL.
//
// Owns the window, the OpenGL 3 context and the ImGui context (with ImGui's
// GLFW and OpenGL3 backends). Views only call ImGui; they never see the window
// system. ImGui's imgui.ini is disabled: the viewer leaves no files behind.
// Errors: false + one line in *error. Threads: UI thread only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct GLFWwindow;

namespace ringside::gui {

struct BackendOptions {
  std::string title = "ringside";
  int width = 1280, height = 800;
  bool visible = true;  // false: a hidden window, for --screenshot
  bool dark = true;
};

// A key press as the window system reported it. ImGui 1.86 samples key state once a frame, so
// a press and release within one frame (scripted input, fast typing) would be lost; these are
// queued per press. Letters are 'A'..'Z'.
struct KeyPress {
  enum : int { kUp = 1000, kDown, kLeft, kRight, kBackspace, kEscape, kEnter, kF3 };
  int key = 0;
  bool ctrl = false, shift = false;
};

class Backend {
 public:
  Backend() = default;
  ~Backend();
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  bool init(const BackendOptions& options, std::string* error);
  bool shouldClose() const;
  void requestClose();
  // Polls events (or waits up to `wait_s` for one when > 0) and starts an ImGui frame.
  void beginFrame(double wait_s = 0);
  // Renders the ImGui frame into the back buffer; present() shows it.
  void render();
  void present();
  // The back buffer after render(), RGB, rows top to bottom.
  bool readPixels(std::vector<uint8_t>* rgb, int* width, int* height);
  void setDark(bool dark);
  bool dark() const { return dark_; }
  void setTitle(const std::string& title);
  // The monitor's content scale (1 on a 96-dpi screen, 2 on a HiDPI one); fonts and sizes
  // are scaled by it at init (RINGSIDE_VIEW_SCALE overrides it).
  float contentScale() const { return scale_; }
  // The key presses since the last call (including repeats), oldest first.
  std::vector<KeyPress> takeKeyPresses();
  // An RGBA image (rows top to bottom) as an ImGui texture id, drawn without smoothing; uploaded
  // again only when `version` changes. One image at a time (the timeline's overview).
  void* image(const std::vector<uint8_t>& rgba, int width, int height, uint64_t version);

 private:
  GLFWwindow* window_ = nullptr;
  bool imgui_ = false, glfw_ = false, gl_backend_ = false, glfw_backend_ = false;
  bool dark_ = true;
  float scale_ = 1.0f;
  std::vector<KeyPress> keys_;
  std::vector<int> pressed_;  // GLFW keys pressed during the last poll
  std::vector<int> latched_;  // of those, the ones held down in io.KeysDown for one frame
  unsigned int texture_ = 0;
  uint64_t texture_version_ = 0;
};

}  // namespace ringside::gui
