#include "image/osd_layout.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

namespace fovea::image {

namespace {

Status check_style(const OsdStyle& style, int frame_width, int frame_height) {
  auto bad = [](const std::string& why) {
    return make_error(StatusCode::kInvalidArgument, fmt::format("OSD layout: {}", why));
  };
  if (frame_width <= 0 || frame_height <= 0) {
    return bad(fmt::format("the frame is {}x{} pixels", frame_width, frame_height));
  }
  if (style.thickness < 1 || style.thickness > kMaxDrawCoordinate) {
    return bad(fmt::format("border thickness {} is outside 1..{}", style.thickness, kMaxDrawCoordinate));
  }
  if (!(style.fill_alpha >= 0.0f && style.fill_alpha <= 1.0f)) {
    return bad(fmt::format("fill alpha {} is outside 0..1", style.fill_alpha));
  }
  if (style.text_scale < 1 || style.text_scale > kMaxTextScale) {
    return bad(fmt::format("text scale {} is outside 1..{}", style.text_scale, kMaxTextScale));
  }
  if (style.image < 0) return bad(fmt::format("image index {} is negative", style.image));
  return Status::ok();
}

// A box edge clamped to [0, limit] and rounded to the nearest pixel boundary, halves up.
int pixel_edge(float v, int limit) {
  const float clamped = std::clamp(v, 0.0f, static_cast<float>(limit));
  return static_cast<int>(std::floor(clamped + 0.5f));
}

bool finite_box(const Box& b) {
  return std::isfinite(b.x1) && std::isfinite(b.y1) && std::isfinite(b.x2) && std::isfinite(b.y2);
}

DrawCommand rectangle(const detail::PixelBox& box, const OsdColor& color, float alpha, int thickness,
                      int image) {
  DrawCommand c;
  c.kind = DrawKind::kRectangle;
  c.image = image;
  c.x0 = box.x_begin;
  c.y0 = box.y_begin;
  c.x1 = box.x_end;
  c.y1 = box.y_end;
  std::copy(color.begin(), color.end(), c.color);
  c.alpha = alpha;
  c.thickness = thickness;
  return c;
}

// The label's top-left corner: above the box, else inside it, then moved into the frame.
detail::PixelBox label_box(const detail::PixelBox& box, LabelSize size, int frame_width, int frame_height) {
  const int above = box.y_begin - size.height;
  int y = above >= 0 ? above : box.y_begin;
  y = std::max(0, std::min(y, frame_height - size.height));
  const int x = std::max(0, std::min(box.x_begin, frame_width - size.width));
  return {x, y, x + size.width, y + size.height};
}

DrawCommand label(const detail::PixelBox& at, const std::string& text, int scale, int image) {
  DrawCommand c;
  c.kind = DrawKind::kText;
  c.image = image;
  c.x0 = at.x_begin;
  c.y0 = at.y_begin;
  std::copy(kOsdLabelTextColor.begin(), kOsdLabelTextColor.end(), c.color);
  std::copy(kOsdLabelBackground.begin(), kOsdLabelBackground.end(), c.background);
  c.background_alpha = kOsdLabelBackgroundAlpha;
  c.scale = scale;
  std::memcpy(c.text, text.data(), std::min<std::size_t>(text.size(), kMaxDrawText));
  return c;
}

}  // namespace

OsdColor osd_class_color(int class_id) {
  const int index = ((class_id % kOsdPaletteSize) + kOsdPaletteSize) % kOsdPaletteSize;
  return kOsdPalette[static_cast<std::size_t>(index)];
}

std::string osd_label_text(const OsdObject& object, const OsdStyle& style) {
  std::string text;
  if (object.track_id >= 0) text += fmt::format("#{} ", object.track_id);
  text += object.label.empty() ? fmt::format("class {}", object.class_id) : std::string(object.label);
  if (style.show_scores && std::isfinite(object.score)) text += fmt::format(" {:.2f}", object.score);
  if (text.size() > static_cast<std::size_t>(kMaxDrawText)) text.resize(kMaxDrawText);
  return text;
}

LabelSize label_size(std::string_view text, int scale) {
  const int characters = static_cast<int>(std::min<std::size_t>(text.size(), kMaxDrawText));
  // As detail::command_box lays out a kText command: `scale` pixels of padding around the text.
  return {(2 + characters * kGlyphWidth) * scale, (2 + kGlyphHeight) * scale};
}

Status append_osd_commands(std::span<const OsdObject> objects, const OsdStyle& style, int frame_width,
                           int frame_height, std::vector<DrawCommand>& commands) {
  FOVEA_TRY(check_style(style, frame_width, frame_height));
  for (const OsdObject& object : objects) {
    if (!finite_box(object.box)) continue;
    const Box b = normalized_box(object.box);
    const detail::PixelBox box{pixel_edge(b.x1, frame_width), pixel_edge(b.y1, frame_height),
                               pixel_edge(b.x2, frame_width), pixel_edge(b.y2, frame_height)};
    if (box.x_begin >= box.x_end || box.y_begin >= box.y_end) continue;
    const OsdColor color = osd_class_color(object.class_id);
    if (style.fill_alpha > 0.0f) commands.push_back(rectangle(box, color, style.fill_alpha, 0, style.image));
    commands.push_back(rectangle(box, color, 1.0f, style.thickness, style.image));
    if (!style.show_labels) continue;
    const std::string text = osd_label_text(object, style);
    const detail::PixelBox at = label_box(box, label_size(text, style.text_scale), frame_width, frame_height);
    commands.push_back(label(at, text, style.text_scale, style.image));
  }
  return Status::ok();
}

}  // namespace fovea::image
