// fovea_rtsp_test_server: a real RTSP server for the live-source tests (issue 24), on GStreamer's
// RTSP server library. It serves one live H.264 stream (a moving ball, encoded as it is captured)
// to every client that asks, over RTP/UDP or RTP/TCP (interleaved) as the client chooses, with
// RTCP sender reports that carry the sender's wall clock (NTP), as a camera does.
//
//   fovea_rtsp_test_server --port P --mount /cam [--width 320 --height 240 --fps 30 --gop 30]
//                          [--codec h264|h265] [--clock-jump-at-ms T --clock-jump-ms D]
//
// --clock-jump-*: a camera whose clock is wrong: from T ms of the stream on, the RTP time of every
// packet is moved by D ms (negative: backwards), so the stream's clock jumps once.
//
// --port 0 lets the system pick a free port. Once it listens it prints one line on stdout,
// "ready rtsp://127.0.0.1:P/cam", which the tests wait for; SIGTERM and SIGINT stop it cleanly.
#include <glib-unix.h>
#include <gst/gst.h>
#include <gst/rtp/gstrtpbuffer.h>
#include <gst/rtsp-server/rtsp-server.h>

#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace {

struct ServerOptions {
  int port = 0;
  std::string mount = "/cam";
  int width = 320;
  int height = 240;
  int fps = 30;
  int gop = 30;
  std::string codec = "h264";
  std::int64_t clock_jump_at_ms = 0;
  std::int64_t clock_jump_ms = 0;  // 0: a correct clock
};

std::optional<std::int64_t> parse_integer(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<int> parse_positive_or_zero(std::string_view text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) {
    return std::nullopt;
  }
  return value;
}

// Every flag takes one value; anything else is a usage error.
std::optional<ServerOptions> parse_arguments(int argc, char** argv) {
  ServerOptions options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const std::string_view value = argv[i + 1];
    if (flag == "--mount") {
      if (!value.starts_with('/')) return std::nullopt;
      options.mount = value;
      continue;
    }
    if (flag == "--codec") {
      if (value != "h264" && value != "h265") return std::nullopt;
      options.codec = value;
      continue;
    }
    if (flag == "--clock-jump-ms") {
      const std::optional<std::int64_t> jump = parse_integer(value);
      if (!jump) return std::nullopt;
      options.clock_jump_ms = *jump;
      continue;
    }
    const std::optional<int> number = parse_positive_or_zero(value);
    if (!number) return std::nullopt;
    if (flag == "--port") {
      options.port = *number;
    } else if (flag == "--width") {
      options.width = *number;
    } else if (flag == "--height") {
      options.height = *number;
    } else if (flag == "--fps") {
      options.fps = *number;
    } else if (flag == "--gop") {
      options.gop = *number;
    } else if (flag == "--clock-jump-at-ms") {
      options.clock_jump_at_ms = *number;
    } else {
      return std::nullopt;
    }
  }
  const bool all_pairs = argc % 2 == 1;
  const bool sizes_valid = options.width > 0 && options.height > 0 && options.fps > 0 && options.gop > 0;
  return all_pairs && sizes_valid ? std::optional(options) : std::nullopt;
}

// The media every client shares. is-live: frames are made at the frame rate, as a camera does,
// and never faster; zerolatency + ultrafast: each frame is sent as soon as it is captured, with no
// B-frames, so a frame's RTP time is its capture time; config-interval=-1: parameter sets with
// every keyframe, so a client that joins the shared stream late can start at the next keyframe.
// H.265 is there for a camera whose codec is changed while fovea watches it.
std::string launch_description(const ServerOptions& options) {
  const std::string gop = std::to_string(options.gop);
  const std::string encode =
      options.codec == "h265"
          ? "x265enc tune=zerolatency speed-preset=ultrafast key-int-max=" + gop +
                " ! video/x-h265,profile=main ! rtph265pay"
          : "x264enc tune=zerolatency speed-preset=ultrafast key-int-max=" + gop + " ! rtph264pay";
  return "( videotestsrc is-live=true pattern=ball ! video/x-raw,width=" + std::to_string(options.width) +
         ",height=" + std::to_string(options.height) + ",framerate=" + std::to_string(options.fps) + "/1 ! " +
         encode + " name=pay0 pt=96 config-interval=-1 )";
}

// RTCP sender reports as often as every kRtcpMinIntervalNs instead of RTP's usual 5 s (RFC 3550,
// 6.2), so that a client learns the stream's wall clock within about a second of joining: the
// tests wait for it. The sessions exist once the media is prepared.
constexpr guint64 kRtcpMinIntervalNs = GST_SECOND / 2;

void on_media_prepared(GstRTSPMedia* media, gpointer) {
  for (guint i = 0; i < gst_rtsp_media_n_streams(media); ++i) {
    GObject* session = gst_rtsp_stream_get_rtpsession(gst_rtsp_media_get_stream(media, i));
    if (session) {
      g_object_set(session, "rtcp-min-interval", kRtcpMinIntervalNs, nullptr);
      g_object_unref(session);
    }
  }
}

// Moves the RTP time of every packet from clock_jump_at_ms of the stream on by clock_jump_ms (90 kHz
// for video). The packets' own timestamps stay: the server sends them on time, only the clock
// the camera writes into them is wrong.
gboolean shift_rtp_time(GstBuffer** buffer, guint, gpointer user_data) {
  const auto& options = *static_cast<const ServerOptions*>(user_data);
  if (!GST_BUFFER_PTS_IS_VALID(*buffer)) return TRUE;
  // The stream's time counts from its first packet (a live pipeline's timestamps do not start at 0);
  // only the media's one streaming thread gets here.
  static GstClockTime first_pts = GST_BUFFER_PTS(*buffer);
  const auto at = static_cast<GstClockTime>(options.clock_jump_at_ms) * GST_MSECOND;
  if (GST_BUFFER_PTS(*buffer) < first_pts + at) return TRUE;
  *buffer = gst_buffer_make_writable(*buffer);
  GstRTPBuffer rtp = GST_RTP_BUFFER_INIT;
  if (gst_rtp_buffer_map(*buffer, GST_MAP_READWRITE, &rtp)) {
    constexpr std::int64_t kVideoClockRate = 90'000;
    const auto shift = static_cast<guint32>(options.clock_jump_ms * kVideoClockRate / 1000);
    gst_rtp_buffer_set_timestamp(&rtp, gst_rtp_buffer_get_timestamp(&rtp) + shift);  // wraps as RTP time does
    gst_rtp_buffer_unmap(&rtp);
  }
  return TRUE;
}

// The payloader pushes single packets and lists of them (a frame's fragments).
GstPadProbeReturn jump_the_clock(GstPad*, GstPadProbeInfo* info, gpointer user_data) {
  if (info->type & GST_PAD_PROBE_TYPE_BUFFER_LIST) {
    GstBufferList* list = gst_buffer_list_make_writable(GST_PAD_PROBE_INFO_BUFFER_LIST(info));
    gst_buffer_list_foreach(list, shift_rtp_time, user_data);
    GST_PAD_PROBE_INFO_DATA(info) = list;
  } else {
    GstBuffer* buffer = GST_PAD_PROBE_INFO_BUFFER(info);
    shift_rtp_time(&buffer, 0, user_data);
    GST_PAD_PROBE_INFO_DATA(info) = buffer;
  }
  return GST_PAD_PROBE_OK;
}

void on_media_configure(GstRTSPMediaFactory*, GstRTSPMedia* media, gpointer user_data) {
  g_signal_connect(media, "prepared", G_CALLBACK(on_media_prepared), nullptr);
  const auto* options = static_cast<const ServerOptions*>(user_data);
  if (options->clock_jump_ms == 0) return;
  GstElement* bin = gst_rtsp_media_get_element(media);
  GstElement* payloader = gst_bin_get_by_name(GST_BIN(bin), "pay0");
  GstPad* src = gst_element_get_static_pad(payloader, "src");
  gst_pad_add_probe(src,
                    static_cast<GstPadProbeType>(GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST),
                    jump_the_clock, const_cast<ServerOptions*>(options), nullptr);
  gst_object_unref(src);
  gst_object_unref(payloader);
  gst_object_unref(bin);
}

// A camera's stream cannot be rewound: a client joins it where it is. gst-rtsp-server instead seeks
// the shared pipeline to a PLAY request's Range (FFmpeg always asks for npt=0.000-), which flushes
// the stream of every client already playing and, in 1.22, races its own check of the stream's
// rate, an assertion that aborts the server. Dropping the Range makes the PLAY a plain join.
GstRTSPStatusCode join_where_it_is(GstRTSPClient*, GstRTSPContext* context, gpointer) {
  gst_rtsp_message_remove_header(context->request, GST_RTSP_HDR_RANGE, -1);
  return GST_RTSP_STS_OK;
}

void on_client_connected(GstRTSPServer*, GstRTSPClient* client, gpointer) {
  g_signal_connect(client, "pre-play-request", G_CALLBACK(join_where_it_is), nullptr);
}

gboolean quit_on_signal(gpointer loop) {
  g_main_loop_quit(static_cast<GMainLoop*>(loop));
  return G_SOURCE_REMOVE;
}

}  // namespace

int main(int argc, char** argv) {
  gst_init(&argc, &argv);
  const std::optional<ServerOptions> options = parse_arguments(argc, argv);
  if (!options) {
    std::fprintf(
        stderr,
        "usage: %s --port P --mount /path [--width W --height H --fps F --gop G] [--codec h264|h265]\n"
        "          [--clock-jump-at-ms T --clock-jump-ms D]\n"
        "  (P may be 0: the system picks a free port)\n",
        argv[0]);
    return 2;
  }

  GstRTSPServer* server = gst_rtsp_server_new();
  gst_rtsp_server_set_address(server, "127.0.0.1");
  gst_rtsp_server_set_service(server, std::to_string(options->port).c_str());

  g_signal_connect(server, "client-connected", G_CALLBACK(on_client_connected), nullptr);

  GstRTSPMediaFactory* factory = gst_rtsp_media_factory_new();
  gst_rtsp_media_factory_set_launch(factory, launch_description(*options).c_str());
  gst_rtsp_media_factory_set_shared(factory, TRUE);
  g_signal_connect(factory, "media-configure", G_CALLBACK(on_media_configure),
                   const_cast<ServerOptions*>(&*options));
  gst_rtsp_media_factory_set_protocols(
      factory, static_cast<GstRTSPLowerTrans>(GST_RTSP_LOWER_TRANS_UDP | GST_RTSP_LOWER_TRANS_TCP));
  GstRTSPMountPoints* mounts = gst_rtsp_server_get_mount_points(server);
  gst_rtsp_mount_points_add_factory(mounts, options->mount.c_str(), factory);  // takes the factory
  g_object_unref(mounts);

  GError* error = nullptr;
  GSource* listener = gst_rtsp_server_create_source(server, nullptr, &error);
  if (!listener) {
    std::fprintf(stderr, "cannot listen on 127.0.0.1:%d: %s\n", options->port, error->message);
    g_error_free(error);
    g_object_unref(server);
    return 1;
  }
  g_source_attach(listener, nullptr);

  GMainLoop* loop = g_main_loop_new(nullptr, FALSE);
  g_unix_signal_add(SIGTERM, quit_on_signal, loop);
  g_unix_signal_add(SIGINT, quit_on_signal, loop);

  std::printf("ready rtsp://127.0.0.1:%d%s\n", gst_rtsp_server_get_bound_port(server),
              options->mount.c_str());
  std::fflush(stdout);
  g_main_loop_run(loop);

  g_source_destroy(listener);
  g_source_unref(listener);
  g_main_loop_unref(loop);
  g_object_unref(server);
  return 0;
}
