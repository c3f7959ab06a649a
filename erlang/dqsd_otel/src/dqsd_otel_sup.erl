%% @doc Top supervisor of dqsd_otel. It owns the queue (an ETS table and its
%% counters), so that the queue and what is in it outlive a restart of the
%% exporter, and supervises the exporter.
-module(dqsd_otel_sup).

-behaviour(supervisor).

-include("dqsd_otel_internal.hrl").

-export([start_link/1]).
-export([init/1]).

%% @doc Starts the supervisor with a checked configuration.
-spec start_link(dqsd_otel_config:config()) -> {ok, pid()} | {error, term()}.
start_link(Config) ->
    supervisor:start_link({local, ?MODULE}, ?MODULE, Config).

%% @private
-spec init(dqsd_otel_config:config()) ->
    {ok, {supervisor:sup_flags(), [supervisor:child_spec()]}}.
init(#{enabled := Enabled, batch_size := Batch, queue_limit := Limit} = Config) ->
    %% ordered_set keyed by a monotonic integer: drained in queuing order.
    %% write_concurrency lets callers on different schedulers insert
    %% without serialising on one lock.
    Tab = ets:new(dqsd_otel_queue, [ordered_set, public,
                                    {write_concurrency, true}]),
    Atomics = atomics:new(2, [{signed, true}]),
    atomics:put(Atomics, ?A_ENABLED, case Enabled of true -> 1; false -> 0 end),
    Counters = counters:new(?C_COUNT, [write_concurrency]),
    Queue = {Tab, Atomics, Counters, Batch, Limit},
    persistent_term:put(?PT_QUEUE, Queue),
    Exporter = #{id => dqsd_otel_exporter,
                 start => {dqsd_otel_exporter, start_link, [Config, Queue]},
                 restart => permanent,
                 %% Time for the last flush when the application stops.
                 shutdown => 5000,
                 type => worker,
                 modules => [dqsd_otel_exporter]},
    {ok, {#{strategy => one_for_one, intensity => 5, period => 10}, [Exporter]}}.
