#include <fmt/format.h>

#include "image/draw.h"

namespace fovea::image {

namespace {

const std::uint8_t* host_font() {
  return &kBitmapFont[0][0];
}

bool in_unit_range(float v) {
  return v >= 0.0f && v <= 1.0f;
}

Status check_command(const DrawCommand& c, int index, int batch_size) {
  auto bad = [&](const std::string& why) {
    return make_error(StatusCode::kInvalidArgument, fmt::format("draw command {}: {}", index, why));
  };
  if (c.kind != DrawKind::kRectangle && c.kind != DrawKind::kLine && c.kind != DrawKind::kText) {
    return bad(fmt::format("unknown kind {}", static_cast<int>(c.kind)));
  }
  if (c.image < 0 || c.image >= batch_size) {
    return bad(fmt::format("image {} is outside the batch of {}", c.image, batch_size));
  }
  for (int v : {c.x0, c.y0, c.x1, c.y1}) {
    if (v < -kMaxDrawCoordinate || v > kMaxDrawCoordinate) {
      return bad(fmt::format("coordinate {} is beyond +-{}", v, kMaxDrawCoordinate));
    }
  }
  if (!in_unit_range(c.alpha) || !in_unit_range(c.background_alpha)) {
    return bad(fmt::format("alpha {} or background alpha {} is outside 0..1", c.alpha, c.background_alpha));
  }
  if (c.kind == DrawKind::kLine && (c.thickness < 1 || c.thickness > kMaxDrawCoordinate)) {
    return bad(fmt::format("line thickness {} must be at least 1", c.thickness));
  }
  if (c.kind == DrawKind::kText) {
    if (c.scale < 1 || c.scale > kMaxTextScale) {
      return bad(fmt::format("text scale {} is outside 1..{}", c.scale, kMaxTextScale));
    }
    if (c.text[kMaxDrawText] != '\0') return bad("the text is not NUL-terminated");
  }
  return Status::ok();
}

// Paints command `c` onto its image: every covered pixel of the clipped box, then (NV12) every
// chroma sample whose top-left luma pixel is covered.
void draw_command(const ImageView& view, const DrawCommand& c, const DrawParams& params) {
  const detail::PixelBox box = detail::clip_box(detail::command_box(c), view.width, view.height);
  const detail::PaintColor color = detail::paint_color(c.color, view.format, params);
  const detail::PaintColor background = detail::paint_color(c.background, view.format, params);
  const bool nv12 = view.format == PixelFormat::kNV12;
  for (int y = box.y_begin; y < box.y_end; ++y) {
    for (int x = box.x_begin; x < box.x_end; ++x) {
      const detail::Paint paint = detail::command_paint(c, host_font(), x, y);
      if (paint == detail::Paint::kNone) continue;
      const bool fg = paint == detail::Paint::kColor;
      const detail::PaintColor& col = fg ? color : background;
      const float alpha = fg ? c.alpha : c.background_alpha;
      std::uint8_t* p = view.row(0, y) + (nv12 ? x : 3 * x);
      for (int ch = 0; ch < (nv12 ? 1 : 3); ++ch) p[ch] = detail::paint_sample(p[ch], col.v[ch], alpha);
      if (nv12 && x % 2 == 0 && y % 2 == 0) {
        std::uint8_t* uv = view.row(1, y / 2) + x;
        for (int ch = 0; ch < 2; ++ch) uv[ch] = detail::paint_sample(uv[ch], col.v[1 + ch], alpha);
      }
    }
  }
}

}  // namespace

namespace detail {

Status check_draw(const ImageBatch& images, std::span<const DrawCommand> commands) {
  FOVEA_TRY(check_batch(images, {PixelFormat::kRGB8, PixelFormat::kBGR8, PixelFormat::kNV12}, "draw image"));
  if (!images.rois.empty()) {
    return make_error(StatusCode::kInvalidArgument,
                      "draw: commands use image coordinates; ROIs are not supported");
  }
  for (std::size_t i = 0; i < commands.size(); ++i) {
    FOVEA_TRY(check_command(commands[i], static_cast<int>(i), images.size()));
  }
  return Status::ok();
}

}  // namespace detail

Result<DrawPlan> plan_draw(const ImageBatch& images, std::span<const DrawCommand> commands) {
  FOVEA_TRY(detail::check_draw(images, commands));
  return DrawPlan{detail::kDrawFontBytes + commands.size() * sizeof(DrawCommand)};
}

Status run_draw_cpu(const ImageBatch& images, std::span<const DrawCommand> commands,
                    const DrawParams& params) {
  FOVEA_TRY(detail::check_draw(images, commands));
  for (const DrawCommand& c : commands) draw_command(images.images[c.image], c, params);
  return Status::ok();
}

}  // namespace fovea::image
