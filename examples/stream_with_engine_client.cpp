// The actor engine from C++: start the actors, submit requests and receive their text as it
// is generated, through engine_client (the same door the HTTP server uses).
//
//   build/examples/example_stream_with_engine_client [MODEL]
#include <condition_variable>
#include <cstdio>
#include <mutex>

#include "actors/system/engine_system.hpp"

using namespace actorllm;

int main(int argc, char** argv) {
  engine_config config;
  config.model.model = argc > 1 ? argv[1] : "../shared/models/stories260K";
  config.server.log_stats_interval = 0;
  engine_system engine(config);

  generate_request r;
  r.request_id = "story";
  r.text = "Once upon a time";
  r.params.max_tokens = 80;
  r.params.temperature = 0.8f;
  r.params.seed = 7;

  std::mutex m;
  std::condition_variable done;
  bool finished = false;
  std::printf("%s", r.text.c_str());
  engine.client().submit(r, [&](request_output out) {
    std::printf("%s", out.text.c_str());  // each delta as soon as its step ends
    std::fflush(stdout);
    if (out.finish == finish_reason::none) return;
    std::printf("\n[finish: %s, %d tokens]\n", to_string(out.finish), out.num_generated_tokens);
    std::lock_guard lock(m);
    finished = true;
    done.notify_one();
  });
  std::unique_lock lock(m);
  done.wait(lock, [&] { return finished; });
}
