// Group start-up and the worker loop of multi-GPU training (distributed.h), and
// Trainer::EnableDataParallel, which lives here with the rest of the data-parallel wiring
// rather than in trainer.cpp. The processes themselves are started by chapter 10's
// launcher (chapters/10_multi_gpu/launcher.h), which train_gpt's --nproc uses too.
#include "zero/train/distributed.h"

#include <csignal>
#include <filesystem>

#include "zero/core/error.h"
#include "zero/distributed/data_parallel.h"

namespace fs = std::filesystem;

namespace zero::train {

std::shared_ptr<dist::Communicator> join_group(const DistributedOptions& options,
                                               double timeout_seconds) {
  ZERO_CHECK(options.is_rank() && options.rank < options.world && !options.id_file.empty(),
             "join_group: expected --rank in [0, --world) and an --nccl-id-file, got rank ",
             options.rank, " of world ", options.world, " and file '", options.id_file, "'");
  dist::UniqueId id;
  if (options.rank == 0) {
    id = dist::Communicator::CreateUniqueId();
    const fs::path folder = fs::path(options.id_file).parent_path();
    if (!folder.empty()) fs::create_directories(folder);
    dist::write_unique_id_file(options.id_file, id);
  } else {
    id = dist::read_unique_id_file(options.id_file, timeout_seconds);
  }
  return std::make_shared<dist::Communicator>(options.rank, options.world, id, options.rank);
}

int join_group(Trainer& trainer, const DistributedOptions& options) {
  trainer.EnableDataParallel(join_group(options));
  return options.rank;
}

int run_worker(Trainer& trainer) {
  std::signal(SIGINT, SIG_IGN);
  while (trainer.step() < trainer.config().max_steps) trainer.Step();
  return 0;
}

void Trainer::EnableDataParallel(std::shared_ptr<dist::Communicator> comm,
                                 size_t bucket_cap_bytes) {
  ZERO_CHECK(comm != nullptr && device_ == Device::Cuda(comm->device()),
             "Trainer::EnableDataParallel: expected a communicator on the trainer's device ",
             device_, comm ? detail::str_cat(", got one on cuda:", comm->device()) : ", got none");
  DropGraph();  // data-parallel steps run kernel by kernel
  train_sampler_->SetShard(comm->rank(), comm->world());
  data_parallel_ = std::make_shared<dist::DataParallel>(std::move(comm), model_->NamedParameters(),
                                                        bucket_cap_bytes);
  data_parallel_->BroadcastParameters();  // identical starting weights, whatever was loaded
}

}  // namespace zero::train
