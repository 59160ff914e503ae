"""One V-trace (IMPALA) update: from a batch of unrolls to new weights."""

import gin
import numpy as np
import tensorflow as tf

from learner.agents.gradient_step import GradientStep, require_one_device
from learner.agents.minibatches import PER_UNROLL_ERRORS, average_steps, epoch_minibatches, train_in_minibatches
from learner.agents.policy_losses import (
    check_entropy_decay,
    entropy_weight,
    episode_masks,
    masked_std,
    normalize_advantages,
)
from learner.agents.vtrace import maths as vtrace
from learner.networks import ActorCriticNetwork, EnvOutput
from learner.strategy import split_batch
from seed.settings import require_fraction, require_non_negative

# What VTraceLoss sums per source of a mixed batch, each over all valid steps.
SOURCE_PARTS = ("rho", "kl", "clipped", "steps")
ADVANTAGE_SCALES = ("minibatch", "batch")
# The batch field, [T+1, B], that carries VTraceLoss.advantage_scale='batch''s deviation to every minibatch.
ADVANTAGE_SCALE = "advantage_scale"


@gin.configurable(denylist=["sources"])
class VTraceLoss:
    """IMPALA's loss: policy gradient with V-trace advantages, baseline and entropy terms."""

    # policy/approx_kl estimates KL(mu || pi) from the stored behaviour logits (policy lag plus what
    # earlier epochs moved); policy/clip_fraction is the share of steps outside the clip range.
    # source/<kind>_{rho,kl,clipped} and source/<kind>_steps are the (loss-weighted) sums of pi/mu, of
    # rho - 1 - log rho and of steps outside the clip range over that source's valid steps, and their count,
    # each over all valid steps: a quotient is the source's mean. The mean rho is 1 in expectation however
    # far pi has moved from mu; the KL and the clipped share are what show it.
    SOURCE_PARTS = SOURCE_PARTS
    BASE_METRICS = ("loss/total", "loss/policy", "loss/baseline", "loss/entropy", "loss/entropy_cost",
                    "loss/policy_cloning", "loss/value_cloning", "policy/approx_kl", "policy/clip_fraction")

    def __init__(self, discount: float = 0.99, lambda_: float = 1.0, clip_rho_threshold: float = 1.0,
                 clip_c_threshold: float = 1.0, clip_pg_rho_threshold: float = 1.0,
                 baseline_cost: float = 0.5, entropy_cost: float = 0.01, entropy_decay: str = "none",
                 final_entropy_cost: float = 0.0, entropy_floor: float = 0.0, entropy_floor_cost: float = 0.0,
                 normalize_advantages: bool = False,
                 center_advantages: bool = False, advantage_scale: str = "minibatch",
                 clip_epsilon: float = 0.0, policy_cloning_cost: float = 0.0,
                 value_cloning_cost: float = 0.0,
                 sources: tuple[str, ...] = ("queue",)):
        """The loss's coefficients; rho = pi/mu is the ratio of the learner's policy to the one that acted.

        Settings:
            `discount`: gamma per agent step (0.99); 0 past a termination, a truncation bootstraps.
            `lambda_`: V-trace's lambda, scaling the traces c (1.0: IMPALA's targets; 0.95 in
                atari_vtrace.gin).
            `clip_rho_threshold`: rho-bar, the clip of rho in the value targets' temporal differences (1.0).
            `clip_c_threshold`: c-bar, the clip of rho in the traces that carry later errors back (1.0).
            `clip_pg_rho_threshold`: the clip of rho weighing IMPALA's policy-gradient advantages (1.0);
                unused with `clip_epsilon` > 0.
            `baseline_cost`: weight of the baseline loss 1/2 E[(v_s - V(x_s))^2] in the total (0.5).
            `entropy_cost`: weight of the entropy bonus, which keeps the policy exploring, at the first
                gradient step (0.01; 0.005 in atari_vtrace.gin). Half of Atari's, with centred advantages,
                let BattleZone leave uniform play sooner but DoubleDunk's policy collapse into games it
                stalls (one seed each,
                benchmarks/experiments/2026-12-07-atari5-lower-entropy-namethisgame-doubledunk.md).
            `entropy_decay`: how that weight goes to `final_entropy_cost` over the run's gradient steps (the
                ones the learning rate decays over: `training.schedule_frames`, else the budget): 'linear', or
                'none' (it stays at `entropy_cost`) ('none'). PPO's Atari setting decays it from 0.01; on
                V-trace's BattleZone that start held the policy at uniform for 4M frames (one seed,
                benchmarks/experiments/2026-12-07-atari5-battlezone-ppo-schedules.md).
            `final_entropy_cost`: the weight at the last gradient step with 'linear' (0.0).
            `entropy_floor`: the policy's mean entropy over the batch's steps, in nats, below which
                `entropy_floor_cost` weighs the shortfall, max(0, floor - entropy), in the loss: a bonus that
                acts only once the policy has narrowed past the floor, so a game can leave uniform play early
                without its policy collapsing to one action (0.0: off; uniform over Atari's 18 actions is
                2.89). A lever of the Atari-5 search against DoubleDunk's collapse at a low entropy cost: a
                floor of 1.0 kept the policy above 1.2 nats in every state sampled, and it stalled the games
                all the same (one seed, benchmarks/experiments/2026-12-07-atari5-entropy-floor-doubledunk.md).
            `entropy_floor_cost`: the weight of that shortfall (0.0).
            `normalize_advantages`: divide the policy-gradient advantages by their standard deviation over
                the batch's valid steps, as PPO does (False; True in atari_vtrace.gin), so the policy term's
                scale no longer follows the reward scale and `entropy_cost` weighs against a term of size ~1.
                Under a distribution strategy each replica normalises by its own share's deviation.
            `center_advantages`: with `normalize_advantages`, also subtract the advantages' mean over the
                batch's valid steps first, as PPO's standardisation does (False). Scale alone keeps the
                gradient unbiased, but where rewards are rare a batch's advantages are mostly the value's
                small bias, and dividing by their small deviation turns that bias into a policy term of
                size ~1 pushing every sampled action the same way (the default's policy loss averaged +1.4
                from 2M to 5M frames on BattleZone); centring removes that shared push. A lever of the
                Atari-5 search: one seed each, it took BattleZone from 2,750 to 7,540 at 10M frames and
                kept DoubleDunk from the default's entropy collapse
                (benchmarks/experiments/2026-12-07-atari5-doubledunk-and-centred-battlezone.md), and
                with one seed on every Atari-5 game and on Pong (which still passed +18 within 10M frames)
                it has the suite's first complete score
                (benchmarks/experiments/2026-12-07-atari5-centred-qbert-pong.md); not the default until
                Breakout has run with it and the default has run the rest of the suite.
            `advantage_scale`: with `normalize_advantages`, what the advantages are divided by: 'minibatch',
                their deviation over the gradient step's own minibatch, as PPO does ('minibatch'); or
                'batch', the deviation over the whole batch (every epoch's minibatches alike) of the
                advantages the behaviour policy's stored values give (no network pass: rho = 1, the same
                V-trace recursion). A minibatch of a few unrolls where rewards are rare often holds none,
                and dividing by its own small deviation scales its temporal differences up to the size of
                a minibatch that holds a reward; 'batch' keeps them small. A lever of the Atari-5 search:
                on BattleZone (one seed, to 5.87M frames) it made the steps smaller but did not end the
                random phase sooner and learnt more slowly afterwards
                (benchmarks/experiments/2026-12-07-atari5-battlezone-batch-advantage-scale.md).
            `clip_epsilon`: above 0, PPO's clipped surrogate on the V-trace advantages replaces IMPALA's
                policy gradient (as APPO does): rho weighs each step and is clipped to 1 +- epsilon, so
                several epochs over one batch (`VTraceAgent.epochs`) cannot push the policy far from the one
                that acted; the value targets stay V-trace's (0.0: IMPALA's loss; 0.1 in atari_vtrace.gin).
            `policy_cloning_cost`: CLEAR's (Rolnick et al. 2019) behavioural cloning of the policy: weight of
                KL(mu || pi), the stored behaviour policy's divergence from the learner's, on the replayed steps
                of a mixed batch (`VTraceAgent.sources`), zero on the fresh ones, averaged over all valid steps
                (so with half the batch replayed it weighs half as much as over the replayed steps alone)
                (0.0: off; CLEAR used 0.01).
            `value_cloning_cost`: CLEAR's value cloning: weight of (V(x_s) - V_mu(x_s))^2, the learner's value
                against the one stored when the step was acted, on the same steps (0.0: off; CLEAR 0.005).

        Batches from a mix carry per step `source` (which source gave the unroll: its index in
        `sources`, the names the agent's data source gives them, 0 the fresh queue) and `sample_weight`
        (prioritised replay's importance weight, which weighs that unroll's steps in every mean); without
        them every step is fresh and weighs 1.
        """
        require_fraction("VTraceLoss", discount=discount, lambda_=lambda_, clip_epsilon=clip_epsilon)
        require_non_negative("VTraceLoss", clip_rho_threshold=clip_rho_threshold, clip_c_threshold=clip_c_threshold,
                             clip_pg_rho_threshold=clip_pg_rho_threshold, baseline_cost=baseline_cost,
                             entropy_cost=entropy_cost, final_entropy_cost=final_entropy_cost,
                             entropy_floor=entropy_floor, entropy_floor_cost=entropy_floor_cost,
                             policy_cloning_cost=policy_cloning_cost,
                             value_cloning_cost=value_cloning_cost)
        self.discount = discount
        self.lambda_ = lambda_
        self.clip_rho_threshold = clip_rho_threshold
        self.clip_c_threshold = clip_c_threshold
        self.clip_pg_rho_threshold = clip_pg_rho_threshold
        self.baseline_cost = baseline_cost
        self.entropy_cost = entropy_cost
        self.entropy_decay = check_entropy_decay("VTraceLoss", entropy_decay)
        self.final_entropy_cost = final_entropy_cost
        self.entropy_floor = entropy_floor
        self.entropy_floor_cost = entropy_floor_cost
        self.normalize_advantages = normalize_advantages
        if advantage_scale not in ADVANTAGE_SCALES:
            raise ValueError(f"unknown VTraceLoss.advantage_scale {advantage_scale!r}; use one of {ADVANTAGE_SCALES}")
        self.advantage_scale = advantage_scale
        self.center_advantages = center_advantages
        self.clip_epsilon = clip_epsilon
        self.policy_cloning_cost = policy_cloning_cost
        self.value_cloning_cost = value_cloning_cost
        self.sources = tuple(sources)
        self.metric_names = (*self.BASE_METRICS,
                             *(f"source/{kind}_{part}" for kind in self.sources for part in SOURCE_PARTS))

    @property
    def uses_batch_scale(self) -> bool:
        return self.normalize_advantages and self.advantage_scale == "batch"

    def with_batch_scale(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """`batch` with ADVANTAGE_SCALE, [T+1, B]: the deviation over its valid steps of the advantages
        its stored behaviour values and rewards give, where `advantage_scale` is 'batch' (else as it is)."""
        if not self.uses_batch_scale:
            return batch
        scale = float(self._behaviour_deviation(batch["reward"], batch["behaviour_value"], batch["terminated"],
                                                batch["truncated"]))
        return {**batch, ADVANTAGE_SCALE: np.full(batch["reward"].shape[:2], scale, np.float32)}

    @tf.function
    def _behaviour_deviation(self, reward, values, terminated, truncated):
        # Compiled once: eager, the recursion's per-step ops took about 6 ms a batch of 32 unrolls; compiled, under 1.
        discounts, valid = episode_masks(terminated, truncated, self.discount)
        advantages = vtrace.vtrace_returns(tf.zeros_like(discounts), discounts, reward[1:], values[:-1], values[-1],
                                           valid, lambda_=self.lambda_).advantages
        return masked_std(advantages, valid)

    def __call__(self, agent: ActorCriticNetwork, unrolls: dict[str, tf.Tensor], progress=0.0):
        """`unrolls` holds time-major [T+1, B, ...] tensors; `progress` is the share of the run's gradient
        steps taken (for `entropy_decay`). Returns (total loss, metrics, per-unroll errors [B]: the mean
        |v_s - V(x_s)| over each unroll's valid steps, prioritised replay's priority)."""
        outputs, _ = agent.unroll(unrolls["prev_action"],
                               EnvOutput(unrolls["reward"], unrolls["first"], unrolls["observation"]),
                               unrolls["core_state"][0])
        logits = outputs.policy_logits[:-1]
        values = outputs.baseline[:-1]
        actions = unrolls["action"][:-1]
        target_log_probs = -tf.nn.sparse_softmax_cross_entropy_with_logits(labels=actions, logits=logits)
        behaviour_logits = unrolls["behaviour_logits"][:-1]
        behaviour_log_probs = -tf.nn.sparse_softmax_cross_entropy_with_logits(labels=actions, logits=behaviour_logits)
        discounts, valid = episode_masks(unrolls["terminated"], unrolls["truncated"], self.discount)
        source = unrolls["source"][:-1] if "source" in unrolls else tf.zeros_like(actions)
        # A prioritised unroll's importance weight weighs its steps in every mean below.
        weighted = valid * unrolls["sample_weight"][:-1] if "sample_weight" in unrolls else valid
        log_rhos = target_log_probs - behaviour_log_probs
        returns = vtrace.vtrace_returns(
            log_rhos, discounts, unrolls["reward"][1:], values, outputs.baseline[-1], valid,
            self.clip_rho_threshold, self.clip_c_threshold, self.clip_pg_rho_threshold, self.lambda_)
        advantages = returns.advantages if self.clip_epsilon else returns.pg_advantages
        if self.normalize_advantages:
            # The batch's deviation rides along every step of the batch, so it survives any split into
            # minibatches and replicas.
            scale = unrolls[ADVANTAGE_SCALE][0, 0] if self.uses_batch_scale else None
            advantages = normalize_advantages(advantages, valid, center=self.center_advantages, scale=scale)
        if self.clip_epsilon:
            pg_loss = vtrace.clipped_surrogate_loss(log_rhos, advantages, weighted, self.clip_epsilon)
        else:
            pg_loss = vtrace.policy_gradient_loss(logits, actions, advantages, weighted)
        baseline_loss = vtrace.baseline_loss(returns.vs, values, weighted)
        entropy_loss = vtrace.entropy_loss(logits, weighted)
        # CLEAR's terms on the replayed steps, zero on the fresh ones, averaged over all valid steps: the
        # same denominator as every other term, so replicas (each its own share of rows) combine exactly.
        replayed = tf.cast(source > 0, tf.float32)
        policy_cloning = vtrace.masked_mean(vtrace.kl_divergence(behaviour_logits, logits) * replayed, weighted)
        value_cloning = vtrace.masked_mean(tf.square(values - unrolls["behaviour_value"][:-1]) * replayed, weighted) \
            if "behaviour_value" in unrolls else tf.constant(0.0)
        entropy_cost = entropy_weight(self.entropy_cost, self.final_entropy_cost, self.entropy_decay, progress)
        total = (pg_loss + self.baseline_cost * baseline_loss + entropy_cost * entropy_loss
                 + self.policy_cloning_cost * policy_cloning + self.value_cloning_cost * value_cloning)
        if self.entropy_floor_cost:
            total += self.entropy_floor_cost * tf.nn.relu(self.entropy_floor + entropy_loss)  # entropy_loss = -H
        rhos = tf.exp(log_rhos)
        clipped = (tf.cast(tf.abs(rhos - 1.0) > self.clip_epsilon, tf.float32) if self.clip_epsilon
                   else tf.zeros_like(rhos))
        kl = rhos - 1.0 - log_rhos  # KL(mu || pi) in expectation over the actions mu chose
        metrics = {"loss/total": total, "loss/policy": pg_loss, "loss/baseline": baseline_loss,
                   "loss/entropy": entropy_loss, "loss/entropy_cost": entropy_cost,
                   "loss/policy_cloning": policy_cloning,
                   "loss/value_cloning": value_cloning,
                   "policy/approx_kl": vtrace.masked_mean(kl, weighted),
                   "policy/clip_fraction": vtrace.masked_mean(clipped, weighted),
                   "valid_steps": tf.reduce_sum(weighted)}
        for index, kind in enumerate(self.sources):
            of_kind = tf.cast(source == index, tf.float32)
            for part, value in zip(self.SOURCE_PARTS, (rhos, kl, clipped, 1.0)):
                metrics[f"source/{kind}_{part}"] = vtrace.masked_mean(value * of_kind, weighted)
        errors = tf.reduce_sum(tf.abs(returns.vs - values) * valid, 0) / tf.maximum(tf.reduce_sum(valid, 0), 1.0)
        return total, metrics, tf.stop_gradient(errors)


@gin.configurable(denylist=["agent", "optimizer", "strategy", "num_training_steps"])
class VTraceTrainer:
    """Owns the update's tf.function; the agent's variables are the ones inference reads.

    Under a tf.distribute strategy each replica computes gradients on its share
    of the batch; they are combined (over every replica of every learner) into
    the whole batch's gradient, then clipped and checked once, so all replicas
    take the same decision and the same step.

    Settings:
        `loss`: the VTraceLoss to minimise (None: a VTraceLoss built with its own bindings; runs saved
            before the agent folders record `VTraceTrainer.loss = None`, so it stays settable).
        `max_gradient_norm`: the global norm the combined gradient is clipped to (40; 0.5 in atari_vtrace.gin).
        `jit_compile`: have XLA compile the whole update, on one device only (False: on CPU it made the
            update 2x slower); learner/agents/gradient_step.py says when that pays, benchmarks/xla.py measures it.
        `minibatch_loop_in_graph`: run all of a batch's epochs x minibatches gradient steps in one compiled
            call (False: one call per step): the steps and their minibatches are the same, but the
            metrics come back once per batch instead of once per step and no step waits on Python. It pays
            where a step's fixed cost (the call from Python, host-side copies, a device sync per step)
            rivals its compute, as on a GPU learner, most with `jit_compile` as well: XLA also compiles
            the minibatches' gather for the device (TensorFlow has no GPU gather for uint8 frames, so
            without it they are gathered on the host); on an H200 it made the update 1.3x faster alone
            and 4.9x with XLA (benchmarks/update_loop.py). One device only, as `jit_compile`.
    """

    def __init__(self, agent: ActorCriticNetwork, optimizer, loss: VTraceLoss = None,
                 max_gradient_norm: float = 40.0, strategy: tf.distribute.Strategy = None,
                 jit_compile: bool = False, minibatch_loop_in_graph: bool = False, num_training_steps: int = 1):
        self.agent = agent
        self.optimizer = optimizer
        self.num_training_steps = max(1, num_training_steps)  # what VTraceLoss.entropy_decay decays over
        self.loss = loss or VTraceLoss()
        # What _update_steps_impl records of each step, in this order.
        self.step_metrics = (*self.loss.metric_names, *GradientStep.METRICS)
        self.strategy = strategy or tf.distribute.get_strategy()
        if minibatch_loop_in_graph:
            require_one_device("VTraceTrainer", "minibatch_loop_in_graph", self.strategy)
        self.step = GradientStep("VTraceTrainer", optimizer, agent.trainable_variables, max_gradient_norm,
                                 jit_compile, self.strategy)
        self._update = self.step.compile(self._update_impl)
        self._update_steps = self.step.compile(self._update_steps_impl) if minibatch_loop_in_graph else None

    def _replica_sums(self, unrolls):
        """This replica's gradients and metrics, weighted by its number of valid steps, and that
        weight, flattened into one vector so that combining replicas takes one all-reduce."""
        variables = self.agent.trainable_variables
        progress = tf.cast(self.optimizer.iterations, tf.float32) / self.num_training_steps
        with tf.GradientTape() as tape:
            total, metrics, errors = self.loss(self.agent, unrolls, progress)
        weight = metrics["valid_steps"]  # the loss's masked means divide by it (1 where it is 0)
        weight = tf.where(weight > 0, weight, 1.0)
        gradients = tape.gradient(total, variables)
        parts = [g * weight for g in gradients] + [metrics[k] * weight for k in self.loss.metric_names] + [weight]
        return tf.concat([tf.reshape(p, [-1]) for p in parts], 0), errors

    def _update_impl(self, unrolls):
        # Summing weighted shares and dividing by the total weight gives exactly the masked means
        # (and their gradients) over the whole batch, however the valid steps fall between replicas.
        replica_sums, replica_errors = self.strategy.run(self._replica_sums, args=(unrolls,))
        sums = self.strategy.reduce(tf.distribute.ReduceOp.SUM, replica_sums, axis=None)
        # This learner's replicas hold consecutive shares of its batch: their errors in batch order.
        errors = tf.concat(self.strategy.experimental_local_results(replica_errors), 0)
        variables = self.agent.trainable_variables
        sizes = [int(np.prod(v.shape)) for v in variables] + [1] * (len(self.loss.metric_names) + 1)
        parts = tf.split(sums / sums[-1], sizes)
        gradients = [tf.reshape(p, v.shape) for p, v in zip(parts, variables)]
        metrics = {k: p[0] for k, p in zip(self.loss.metric_names, parts[len(variables):])}
        return {**metrics, **self.step.apply(metrics["loss/total"], gradients), PER_UNROLL_ERRORS: errors}

    def _update_steps_impl(self, unrolls, order):
        """The gradient steps on time-major `unrolls`, step i on the unrolls order[i]: each step's
        step_metrics [steps, len(step_metrics)] and the per-unroll errors of each unroll's last step [B]."""
        history = tf.TensorArray(tf.float32, size=tf.shape(order)[0])
        errors = tf.zeros(tf.shape(next(iter(unrolls.values())))[1:2])
        for i in tf.range(tf.shape(order)[0]):
            rows = order[i]
            step = self._update_impl({k: tf.gather(v, rows, axis=1) for k, v in unrolls.items()})
            history = history.write(i, tf.stack([tf.cast(step[k], tf.float32) for k in self.step_metrics]))
            errors = tf.tensor_scatter_nd_update(errors, rows[:, None], step[PER_UNROLL_ERRORS])
        return history.stack(), errors

    def train(self, batch: dict[str, np.ndarray], epochs: int, minibatches: int,
              rng: np.random.Generator) -> dict[str, float]:
        """`epochs` passes of `minibatches` gradient steps over time-major [T+1, B, ...] unrolls, reshuffled
        every pass (learner/agents/minibatches.py): the steps' metrics averaged, with the last pass's
        PER_UNROLL_ERRORS [B] in batch order."""
        batch = self.loss.with_batch_scale(batch)
        if self._update_steps is None or epochs == minibatches == 1:  # one step: one call either way
            return train_in_minibatches(self.update, batch, epochs, minibatches, rng)
        size = next(iter(batch.values())).shape[1]
        if size % minibatches:
            raise ValueError(f"a batch of {size} unrolls does not split into {minibatches} equal minibatches; "
                             "make VTraceAgent.batch_size a multiple of VTraceAgent.minibatches")
        order = np.stack([rows for _ in range(epochs) for rows in epoch_minibatches(size, minibatches, rng)])
        history, errors = self._update_steps(batch, order.astype(np.int32))
        steps = [dict(zip(self.step_metrics, row)) for row in history.numpy()]
        return {**average_steps(steps), PER_UNROLL_ERRORS: errors.numpy()}

    def update(self, batch: dict[str, np.ndarray]) -> dict[str, float]:
        """`batch` holds time-major [T+1, B, ...] unrolls as the data source forms them. The metrics include
        PER_UNROLL_ERRORS, an array [B] (learner/agents/minibatches.py puts minibatches' back in order)."""
        if ADVANTAGE_SCALE not in batch:  # a minibatch of train() carries its whole batch's
            batch = self.loss.with_batch_scale(batch)
        return {k: v.numpy() for k, v in self._update(split_batch(self.strategy, batch)).items()}
