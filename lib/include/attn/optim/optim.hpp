// The optim layer in one include: optimizers, gradient clipping and learning-rate schedules.
#pragma once
#include "attn/optim/adam.hpp"
#include "attn/optim/clip.hpp"
#include "attn/optim/config.hpp"
#include "attn/optim/optimizer.hpp"
#include "attn/optim/rmsprop.hpp"
#include "attn/optim/schedule.hpp"
#include "attn/optim/sgd.hpp"
