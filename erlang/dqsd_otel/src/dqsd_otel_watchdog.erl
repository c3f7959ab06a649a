%% Copyright The deltaq-otel Authors
%% SPDX-License-Identifier: Apache-2.0

%% @doc The exporter's watchdog: starts the exporter again, after a backoff,
%% whenever it stops, however often that happens.
%%
%% The exporter is a `temporary' child of `dqsd_otel_sup' (see there why);
%% this process monitors it and, when it goes down, starts it again with
%% `supervisor:start_child/2' after
%%
%%     min(retry_backoff_ms · 2^(N−1), retry_backoff_max_ms) milliseconds
%%
%% for the N-th restart in a row. N goes back to 1 when the exporter that
%% went down had run for at least `retry_backoff_max_ms'. An exporter that
%% keeps failing is thus started at most once per `retry_backoff_max_ms'
%% (5 s by default) and never given up on, so export resumes by itself once
%% the cause is gone; meanwhile callers queue up to the queue limit, then
%% drop and count, as when the collector is down.
%%
%% The watchdog does not trap exits: when the supervisor stops it, it stops
%% at once, also in the middle of a `start_child' call (the supervisor,
%% busy stopping, does not answer it).
-module(dqsd_otel_watchdog).

-behaviour(gen_server).

-include("dqsd_otel_internal.hrl").
-include_lib("kernel/include/logger.hrl").

-export([start_link/3]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2]).

-record(state, {
    %% The exporter's child spec, as given to the supervisor.
    spec :: supervisor:child_spec(),
    %% retry_backoff_ms and retry_backoff_max_ms.
    initial :: pos_integer(),
    max :: pos_integer(),
    counters :: counters:counters_ref(),
    %% Monitor of the running exporter; undefined while a restart waits.
    monitor :: reference() | undefined,
    %% When the running exporter was started, erlang:monotonic_time(millisecond).
    started :: integer(),
    %% Restarts in a row so far (N − 1 for the next one).
    restarts = 0 :: non_neg_integer()
}).

%% @doc Starts the watchdog of the exporter started by `ExporterSpec',
%% registered as `dqsd_otel_watchdog'.
-spec start_link(supervisor:child_spec(), dqsd_otel_config:config(), #dqsd_queue{}) ->
    {ok, pid()} | {error, term()}.
start_link(ExporterSpec, Config, Queue) ->
    gen_server:start_link({local, ?WATCHDOG}, ?MODULE, {ExporterSpec, Config, Queue}, []).

%% @private The supervisor starts the watchdog after the exporter and waits
%% for this to return, so the exporter is found by name, not by asking the
%% supervisor. A restarted watchdog may find no exporter (it stopped while
%% the watchdog was down): it starts one after the first delay.
-spec init({supervisor:child_spec(), dqsd_otel_config:config(), #dqsd_queue{}}) ->
    {ok, #state{}}.
init({Spec, #{retry_backoff_ms := Initial, retry_backoff_max_ms := Max},
      #dqsd_queue{counters = Counters}}) ->
    State = #state{spec = Spec, initial = Initial, max = Max, counters = Counters,
                   started = now_ms()},
    case whereis(?EXPORTER) of
        undefined -> {ok, schedule(State)};
        Pid -> {ok, watch(Pid, State)}
    end.

%% @private
-spec handle_call(term(), gen_server:from(), #state{}) -> {reply, term(), #state{}}.
handle_call(_Request, _From, State) ->
    unknown_call(State).

-include("dqsd_otel_server.hrl").

%% @private
-spec handle_info(term(), #state{}) -> {noreply, #state{}}.
handle_info({'DOWN', Ref, process, _Pid, _Reason},
            #state{monitor = Ref, started = Started, max = Max} = State) ->
    %% Any reason, `normal' and `shutdown' included: only the supervisor
    %% stops the exporter on purpose, and then it stops the watchdog too.
    Restarts = case now_ms() - Started >= Max of
                   true -> 0;
                   false -> State#state.restarts
               end,
    {noreply, schedule(State#state{monitor = undefined, restarts = Restarts})};
handle_info(restart, #state{monitor = undefined, spec = Spec} = State) ->
    case supervisor:start_child(?SUP, Spec) of
        {ok, Pid} when is_pid(Pid) ->
            counters:add(State#state.counters, ?C_EXPORTER_RESTARTS, 1),
            {noreply, watch(Pid, State#state{started = now_ms()})};
        {error, {already_started, Pid}} when is_pid(Pid) ->
            %% The supervisor had yet to see the old one go (a dead pid is
            %% reported down at once and retried).
            {noreply, watch(Pid, State)};
        Other ->
            ?LOG_WARNING("dqsd_otel: cannot restart the exporter: ~0tP", [Other, 20]),
            {noreply, schedule(State)}
    end;
handle_info(_Info, State) ->
    {noreply, State}.

%%--------------------------------------------------------------------

watch(Pid, State) ->
    State#state{monitor = monitor(process, Pid)}.

schedule(#state{initial = Initial, max = Max, restarts = Restarts} = State) ->
    Delay = min(Initial bsl min(Restarts, 30), Max),
    _ = erlang:send_after(Delay, self(), restart),
    State#state{restarts = Restarts + 1}.

now_ms() ->
    erlang:monotonic_time(millisecond).
