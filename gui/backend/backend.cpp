#include "backend.h"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace ringside::gui {
namespace {

std::string* g_glfw_error = nullptr;

void onGlfwError(int code, const char* text) {
  if (g_glfw_error != nullptr && g_glfw_error->empty()) {
    *g_glfw_error = "GLFW error " + std::to_string(code) + ": " + (text ? text : "");
  }
}

std::vector<KeyPress>* g_keys = nullptr;
std::vector<int>* g_pressed = nullptr;  // GLFW key codes pressed during this poll

bool isModifier(int key) { return key >= GLFW_KEY_LEFT_SHIFT && key <= GLFW_KEY_RIGHT_SUPER; }

void onKey(GLFWwindow*, int key, int, int action, int mods) {
  if (g_pressed != nullptr && action == GLFW_PRESS && key >= 0 && !isModifier(key) &&
      key < static_cast<int>(IM_ARRAYSIZE(ImGuiIO::KeysDown)) && g_pressed->size() < 256) {
    g_pressed->push_back(key);
  }
  if (g_keys == nullptr || (action != GLFW_PRESS && action != GLFW_REPEAT)) return;
  KeyPress k;
  k.ctrl = (mods & GLFW_MOD_CONTROL) != 0;
  k.shift = (mods & GLFW_MOD_SHIFT) != 0;
  switch (key) {
    case GLFW_KEY_UP: k.key = KeyPress::kUp; break;
    case GLFW_KEY_DOWN: k.key = KeyPress::kDown; break;
    case GLFW_KEY_LEFT: k.key = KeyPress::kLeft; break;
    case GLFW_KEY_RIGHT: k.key = KeyPress::kRight; break;
    case GLFW_KEY_BACKSPACE: k.key = KeyPress::kBackspace; break;
    case GLFW_KEY_ESCAPE: k.key = KeyPress::kEscape; break;
    case GLFW_KEY_ENTER: case GLFW_KEY_KP_ENTER: k.key = KeyPress::kEnter; break;
    case GLFW_KEY_F3: k.key = KeyPress::kF3; break;
    default:
      if (key >= GLFW_KEY_A && key <= GLFW_KEY_Z) k.key = 'A' + (key - GLFW_KEY_A);
      break;
  }
  if (k.key != 0 && g_keys->size() < 256) g_keys->push_back(k);
}

}  // namespace

std::vector<KeyPress> Backend::takeKeyPresses() {
  std::vector<KeyPress> out;
  out.swap(keys_);
  return out;
}

Backend::~Backend() {
  if (g_keys == &keys_) g_keys = nullptr;
  if (g_pressed == &pressed_) g_pressed = nullptr;
  if (texture_ != 0 && window_ != nullptr) glDeleteTextures(1, &texture_);
  if (gl_backend_) ImGui_ImplOpenGL3_Shutdown();
  if (glfw_backend_) ImGui_ImplGlfw_Shutdown();
  if (imgui_) ImGui::DestroyContext();
  if (window_ != nullptr) glfwDestroyWindow(window_);
  if (glfw_) glfwTerminate();
}

bool Backend::init(const BackendOptions& options, std::string* error) {
  std::string glfw_error;
  g_glfw_error = &glfw_error;
  glfwSetErrorCallback(onGlfwError);
  auto fail = [&](const std::string& what) {
    *error = what + (glfw_error.empty() ? "" : " (" + glfw_error + ")");
    g_glfw_error = nullptr;
    return false;
  };
  if (!glfwInit()) return fail("cannot start GLFW: no display? (set DISPLAY, or use xvfb-run)");
  glfw_ = true;
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  glfwWindowHint(GLFW_VISIBLE, options.visible ? GLFW_TRUE : GLFW_FALSE);
  window_ = glfwCreateWindow(options.width, options.height, options.title.c_str(), nullptr, nullptr);
  if (window_ == nullptr) return fail("cannot open an OpenGL 3.0 window");
  glfwMakeContextCurrent(window_);
  glfwSwapInterval(options.visible ? 1 : 0);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  imgui_ = true;
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // no imgui.ini litter
  io.LogFilename = nullptr;
  io.ConfigFlags |= ImGuiConfigFlags_NavEnableKeyboard;
  float xs = 1, ys = 1;
  glfwGetWindowContentScale(window_, &xs, &ys);
  scale_ = std::clamp(std::max(xs, ys), 1.0f, 4.0f);
  if (const char* env = std::getenv("RINGSIDE_VIEW_SCALE"); env != nullptr && *env != '\0') {
    scale_ = std::clamp(static_cast<float>(std::atof(env)), 0.5f, 4.0f);
  }
  if (scale_ != 1.0f) {  // a crisp font at the scaled size rather than a stretched one
    ImFontConfig font;
    font.SizePixels = 13.0f * scale_;
    io.Fonts->AddFontDefault(&font);
  }
  setDark(options.dark);
  g_keys = &keys_;
  g_pressed = &pressed_;
  glfwSetKeyCallback(window_, onKey);  // before ImGui's backend, which chains to it
  if (!ImGui_ImplGlfw_InitForOpenGL(window_, true)) return fail("ImGui GLFW backend failed");
  glfw_backend_ = true;
  if (!ImGui_ImplOpenGL3_Init("#version 130")) return fail("ImGui OpenGL3 backend failed");
  gl_backend_ = true;
  g_glfw_error = nullptr;
  return true;
}

bool Backend::shouldClose() const { return window_ == nullptr || glfwWindowShouldClose(window_); }

void Backend::requestClose() {
  if (window_ != nullptr) glfwSetWindowShouldClose(window_, GLFW_TRUE);
}

void Backend::beginFrame(double wait_s) {
  ImGuiIO& io = ImGui::GetIO();
  // Keys held down for the last frame only (below): released now, unless really still held.
  for (int key : latched_) {
    if (glfwGetKey(window_, key) != GLFW_PRESS) io.KeysDown[key] = false;
  }
  latched_.clear();
  pressed_.clear();
  if (wait_s > 0) {
    glfwWaitEventsTimeout(wait_s);
  } else {
    glfwPollEvents();
  }
  // ImGui 1.86's GLFW backend sets io.KeysDown[] from the press and release events, and ImGui
  // samples it once a frame: a key pressed and released within one poll (xdotool, fast typing,
  // a busy machine) never reads as pressed, so Enter in the search box was lost. A key pressed
  // during this poll is down for this frame (as the backend does for mouse buttons).
  for (int key : pressed_) {
    if (!io.KeysDown[key]) {
      io.KeysDown[key] = true;
      latched_.push_back(key);
    }
  }
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
}

void Backend::render() {
  ImGui::Render();
  int w = 0, h = 0;
  glfwGetFramebufferSize(window_, &w, &h);
  glViewport(0, 0, w, h);
  const ImVec4 bg = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
  glClearColor(bg.x, bg.y, bg.z, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
}

void Backend::present() { glfwSwapBuffers(window_); }

bool Backend::readPixels(std::vector<uint8_t>* rgb, int* width, int* height) {
  int w = 0, h = 0;
  glfwGetFramebufferSize(window_, &w, &h);
  if (w <= 0 || h <= 0) return false;
  std::vector<uint8_t> flipped(static_cast<size_t>(w) * static_cast<size_t>(h) * 3);
  glFinish();
  glReadBuffer(GL_BACK);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, w, h, GL_RGB, GL_UNSIGNED_BYTE, flipped.data());
  if (glGetError() != GL_NO_ERROR) return false;
  // OpenGL's rows run bottom to top.
  const size_t stride = static_cast<size_t>(w) * 3;
  rgb->resize(flipped.size());
  for (int y = 0; y < h; ++y) {
    std::copy_n(flipped.begin() + static_cast<std::ptrdiff_t>(stride * static_cast<size_t>(h - 1 - y)),
                stride, rgb->begin() + static_cast<std::ptrdiff_t>(stride * static_cast<size_t>(y)));
  }
  *width = w;
  *height = h;
  return true;
}

void Backend::setDark(bool dark) {
  dark_ = dark;
  ImGui::GetStyle() = ImGuiStyle();
  if (dark) {
    ImGui::StyleColorsDark();
  } else {
    ImGui::StyleColorsLight();
  }
  ImGui::GetStyle().ScaleAllSizes(scale_);
}

void Backend::setTitle(const std::string& title) {
  if (window_ != nullptr) glfwSetWindowTitle(window_, title.c_str());
}

}  // namespace ringside::gui

namespace ringside::gui {

void* Backend::image(const std::vector<uint8_t>& rgba, int width, int height, uint64_t version) {
  if (window_ == nullptr || width <= 0 || height <= 0 ||
      rgba.size() < static_cast<size_t>(width) * static_cast<size_t>(height) * 4) {
    return nullptr;
  }
  if (texture_ == 0) glGenTextures(1, &texture_);
  if (texture_ == 0) return nullptr;
  if (version != texture_version_) {
    glBindTexture(GL_TEXTURE_2D, texture_);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA, width, height, 0, GL_RGBA, GL_UNSIGNED_BYTE, rgba.data());
    texture_version_ = version;
  }
  return reinterpret_cast<void*>(static_cast<intptr_t>(texture_));
}

}  // namespace ringside::gui
