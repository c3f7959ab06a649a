%% Copyright The deltaq-otel Authors
%% SPDX-License-Identifier: Apache-2.0

%% @doc Top supervisor of dqsd_otel. It owns the queue (an ETS table and its
%% counters), so that the queue and what is in it outlive a restart of the
%% exporter, and supervises the exporter and its watchdog.
%%
%% The exporter is a `temporary' child: the supervisor never restarts it, so
%% its exits do not count towards the restart intensity (5 in 10 s). Were it
%% `permanent', six exits in ten seconds (a crash loop, or someone killing
%% it) would stop this supervisor, the application with it, the queue
%% callers write to, and — for an application started `permanent' — the
%% node. `dqsd_otel_watchdog' restarts it instead, after a backoff and
%% without limit. The supervisor still stops the exporter, with its last
%% flush, when the application stops.
-module(dqsd_otel_sup).

-behaviour(supervisor).

-include("dqsd_otel_internal.hrl").

-export([start_link/1]).
-export([init/1]).

%% @doc Starts the supervisor with a checked configuration.
-spec start_link(dqsd_otel_config:config()) -> {ok, pid()} | {error, term()}.
start_link(Config) ->
    supervisor:start_link({local, ?SUP}, ?MODULE, Config).

%% @private
-spec init(dqsd_otel_config:config()) ->
    {ok, {supervisor:sup_flags(), [supervisor:child_spec()]}}.
init(#{enabled := Enabled, batch_size := Batch, queue_limit := Limit,
       queue_max_bytes := MaxBytes} = Config) ->
    %% ordered_set keyed by a monotonic integer: drained in queuing order.
    %% write_concurrency lets callers on different schedulers insert
    %% without serialising on one lock.
    Tab = ets:new(dqsd_otel_queue, [ordered_set, public,
                                    {write_concurrency, true}]),
    Atomics = atomics:new(?A_COUNT, [{signed, true}]),
    atomics:put(Atomics, ?A_ENABLED, case Enabled of true -> 1; false -> 0 end),
    Counters = counters:new(?C_COUNT, [write_concurrency]),
    Queue = #dqsd_queue{tab = Tab, atomics = Atomics, counters = Counters,
                        batch_size = Batch, limit = Limit, max_bytes = MaxBytes,
                        clock = clock()},
    persistent_term:put(?PT_QUEUE, Queue),
    Exporter = #{id => ?EXPORTER,
                 start => {dqsd_otel_exporter, start_link, [Config, Queue]},
                 restart => temporary,
                 %% Time for the last flush when the application stops.
                 shutdown => 5000,
                 type => worker,
                 modules => [dqsd_otel_exporter]},
    %% Started after the exporter, which it finds by name.
    Watchdog = #{id => ?WATCHDOG,
                 start => {dqsd_otel_watchdog, start_link, [Exporter, Config, Queue]},
                 restart => permanent,
                 shutdown => 1000,
                 type => worker,
                 modules => [dqsd_otel_watchdog]},
    {ok, {#{strategy => one_for_one, intensity => 5, period => 10},
          [Exporter, Watchdog]}}.

%% This runtime system's identity, made once and kept while it runs, so
%% that a span started before a restart of the application and ended after
%% it is still known as started here.
clock() ->
    case persistent_term:get(?PT_CLOCK, undefined) of
        undefined ->
            %% Small terms, since every span context carries it.
            Clock = {node(), list_to_integer(os:getpid()), erlang:system_time(microsecond)},
            persistent_term:put(?PT_CLOCK, Clock),
            Clock;
        Clock ->
            Clock
    end.
