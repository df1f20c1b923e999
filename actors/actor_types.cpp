#include "actors/actor_types.hpp"

namespace actorllm {

void register_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<sampling_params>("actorllm::sampling_params");
  cfg.add_message_type<generate_request>("actorllm::generate_request");
  cfg.add_message_type<token_logprob>("actorllm::token_logprob");
  cfg.add_message_type<request_output>("actorllm::request_output");
  cfg.add_message_type<std::vector<request_output>>("std::vector<actorllm::request_output>");
  cfg.add_message_type<block_copy>("actorllm::block_copy");
  cfg.add_message_type<kv_cache_events>("actorllm::kv_cache_events");
  cfg.add_message_type<prompt_image>("actorllm::prompt_image");
  cfg.add_message_type<prepared_inputs>("actorllm::prepared_inputs");
  cfg.add_message_type<new_sequence>("actorllm::new_sequence");
  cfg.add_message_type<scheduled_sequence>("actorllm::scheduled_sequence");
  cfg.add_message_type<step_plan>("actorllm::step_plan");
  cfg.add_message_type<sequence_sample>("actorllm::sequence_sample");
  cfg.add_message_type<step_result>("actorllm::step_result");
  cfg.add_message_type<engine_request>("actorllm::engine_request");
  cfg.add_message_type<admission_reply>("actorllm::admission_reply");
  cfg.add_message_type<worker_info>("actorllm::worker_info");
  cfg.add_message_type<pool_stats>("actorllm::pool_stats");
  cfg.add_message_type<cache_report>("actorllm::cache_report");
  cfg.add_message_type<scheduler_stats>("actorllm::scheduler_stats");
  cfg.add_message_type<replica_stats>("actorllm::replica_stats");
  cfg.add_message_type<std::vector<replica_stats>>("std::vector<actorllm::replica_stats>");
  cfg.add_message_type<tokenize_reply>("actorllm::tokenize_reply");
  cfg.add_message_type<model_identity>("actorllm::model_identity");
  cfg.add_message_type<join_request>("actorllm::join_request");
  cfg.add_message_type<join_reply>("actorllm::join_reply");
  cfg.add_message_type<std::vector<int32_t>>("std::vector<int32_t>");
  cfg.add_message_type<output_sink_actor>("actorllm::output_sink_actor");
  cfg.add_message_type<worker_actor>("actorllm::worker_actor");
  cfg.add_message_type<scheduler_actor>("actorllm::scheduler_actor");
  cfg.add_message_type<cluster_actor>("actorllm::cluster_actor");
}

}  // namespace actorllm
