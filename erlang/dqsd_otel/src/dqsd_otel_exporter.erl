%% Copyright The deltaq-otel Authors
%% SPDX-License-Identifier: Apache-2.0

%% @doc The exporter: drains the queue in batches and posts them as
%% OTLP/HTTP JSON with `httpc'.
%%
%% It runs every `batch_interval_ms', and sooner when callers have queued a
%% whole batch. Each batch becomes at most two requests, sent in order: the
%% start events to `/v1/logs' (by default one `deltaq.span.starts' record
%% per probe, with `start_events => per_span' one record per span), then the
%% spans to `/v1/traces'. Because the queue is drained in queuing order, a
%% span is never sent before its start event; a start event whose span is
%% in the same export round (the batches queued when it begins) is not sent
%% at all.
%%
%% A request that fails with a connection error or HTTP 429, 502, 503 or 504
%% is retried with exponential backoff and jitter, and no sooner than a
%% Retry-After asks (the OTLP/HTTP retry rules); while it waits nothing else
%% is sent and the queue fills up to its limit, beyond which callers drop
%% and count. A retry is made only if it begins within `max_retry_time_ms'
%% (30 s by default) of the request's first failed attempt and, when
%% `max_retries' is set, is within that many; when either limit is reached,
%% or on any other HTTP error, the request's items are counted as failed
%% and export moves on (once a Retry-After's wait is out). The items a partial success
%% rejects count as failed too; it is not retried. Callers never wait for
%% any of this.
%%
%% Its httpc profile is a stand-alone one, linked to it rather than under
%% inets's supervisor: stopping inets does not disturb it, and it goes with
%% the exporter. A profile under inets's supervisor retried a 503 whose
%% Retry-After is below 100 s by itself, for as long as the endpoint
%% answered so, and the request's caller never heard back (answer/3); a
%% stand-alone profile drops those retries. Any exception of httpc is a
%% failed attempt, counted and retried as a connection error is; the
%% profile is started again before the next attempt. For an https endpoint
%% the exporter starts ssl if it is not running; if that fails it runs
%% degraded, and each attempt tries again with the backoff of a failed
%% request.
-module(dqsd_otel_exporter).

-behaviour(gen_server).

-include("dqsd_otel_internal.hrl").
-include_lib("kernel/include/logger.hrl").

-export([start_link/2]).
-export([init/1, handle_continue/2, handle_call/3, handle_cast/2, handle_info/2,
         terminate/2]).
%% For the tests: the httpc profile as the exporter starts and stops it.
-export([start_profile/1, stop_profile/1]).

%% The stand-alone httpc profile's name. httpc sends a retry of its own to
%% the profile registered under a name made of it; no profile of that name
%% is registered (it would take those retries), so they are dropped.
-define(HTTPC_PROFILE, dqsd_otel_exporter).

-record(state, {
    config :: dqsd_otel_config:config(),
    tab :: ets:tid(),
    atomics :: atomics:atomics_ref(),
    counters :: counters:counters_ref(),
    resource :: dqsd_otel_otlp:resource(),
    headers :: [{string(), string()}],
    %% Requests not yet delivered, in order; the head is being retried.
    pending = [] :: [#dqsd_request{}],
    %% Failed attempts of the head of `pending'.
    attempt = 0 :: non_neg_integer(),
    %% When the head of `pending' first failed, erlang:monotonic_time/1 in
    %% milliseconds: the start of its retry budget. Set with `attempt' 1,
    %% meaningless while `attempt' is 0.
    failed_at = 0 :: integer(),
    retry_timer :: reference() | undefined,
    %% Whether the last attempt failed (to log state changes only).
    failing = false :: boolean(),
    %% Whether the last request delivered was partly rejected (likewise).
    rejecting = false :: boolean(),
    %% Our stand-alone httpc profile, or `down' at start and after httpc
    %% raised or the profile exited: the next attempt starts it first.
    http = down :: pid() | down,
    %% Whether that start may also start ssl (for an https endpoint): until
    %% this exporter has seen it running. Later it waits for whoever
    %% stopped ssl to start it again rather than overrule them.
    start_apps = true :: boolean(),
    %% When the last flush must end, erlang:monotonic_time(millisecond), or
    %% `infinity' before it (terminate/2).
    deadline = infinity :: integer() | infinity
}).

%% The most the last flush may take: below the supervisor's shutdown time
%% for the exporter (dqsd_otel_sup, 5000 ms), which kills it after that.
-define(LAST_FLUSH_MS, 4000).

%% How long a stopped httpc profile is waited for before it is killed: it
%% ends at once unless held up in a call; within the 500 ms between the last
%% flush's answer (?LAST_FLUSH_MS + ?ANSWER_MARGIN_MS) and the kill.
-define(PROFILE_STOP_MS, 200).

%% How much longer than a request's timeout its answer is waited for
%% (answer/3), within the 1000 ms between ?LAST_FLUSH_MS and the kill.
-define(ANSWER_MARGIN_MS, 500).

%% @doc Starts the exporter, registered as `dqsd_otel_exporter'.
-spec start_link(dqsd_otel_config:config(), #dqsd_queue{}) -> {ok, pid()} | {error, term()}.
start_link(Config, Queue) ->
    gen_server:start_link({local, ?EXPORTER}, ?MODULE, {Config, Queue}, []).

%% @private Never fails: what can fail (starting ssl and the httpc
%% profile) is done in handle_continue/2, right after.
-spec init({dqsd_otel_config:config(), #dqsd_queue{}}) ->
    {ok, #state{}, {continue, http_up}}.
init({Config, #dqsd_queue{tab = Tab, atomics = Atomics, counters = Counters}}) ->
    process_flag(trap_exit, true),
    #{service_name := Service, resource_attributes := ResourceAttributes,
      headers := Headers, compression := Compression} = Config,
    State = #state{config = Config, tab = Tab, atomics = Atomics,
                   counters = Counters,
                   resource = dqsd_otel_otlp:resource(Service, ResourceAttributes),
                   headers = case Compression of
                                 gzip -> [{"content-encoding", "gzip"} | Headers];
                                 none -> Headers
                             end},
    schedule_tick(State),
    {ok, State, {continue, http_up}}.

%% @private Starting ssl is a call to the application controller,
%% made here rather than in init/1 so that the supervisor never waits for
%% it: were the controller busy stopping this application, which waits for
%% the supervisor, they would wait for each other.
-spec handle_continue(http_up, #state{}) -> {noreply, #state{}}.
handle_continue(http_up, State) ->
    case http_up(State) of
        {ok, State1} ->
            {noreply, State1};
        {error, Why, State1} ->
            ?LOG_WARNING("dqsd_otel: cannot start the HTTP client (~0tP); exporting "
                         "will retry with backoff", [Why, 20]),
            {noreply, State1#state{failing = true}}
    end.

%% @private
-spec handle_call(term(), gen_server:from(), #state{}) ->
    {reply, term(), #state{}}.
handle_call(flush, _From, State) ->
    {Reply, State1} = flush(cancel_retry(State)),
    {reply, Reply, State1};
handle_call(_Request, _From, State) ->
    unknown_call(State).

-include("dqsd_otel_server.hrl").

%% @private
-spec handle_info(term(), #state{}) -> {noreply, #state{}}.
handle_info(tick, State) ->
    schedule_tick(State),
    {noreply, export(State)};
handle_info(export, State) ->
    %% Several callers may have woken us for the same backlog.
    drop_wakeups(),
    {noreply, export(State)};
handle_info(retry, State) ->
    State0 = elide_pending(State#state{retry_timer = undefined}),
    State1 = send(State0#state.pending, State0),
    {noreply, export(State1)};
handle_info({'EXIT', Pid, _Reason}, #state{http = Pid} = State) ->
    %% Our httpc profile is gone: started again before the next attempt.
    {noreply, State#state{http = down}};
handle_info(_Info, State) ->
    %% Late httpc replies after a timeout, exits of linked processes.
    {noreply, State}.

%% @private The application is stopping (callers no longer queue): one last
%% attempt at what is left, within one export timeout in all (at most
%% ?LAST_FLUSH_MS): each request waits only for what is left of it, and
%% what was not sent by then is given up. Otherwise a collector that does
%% not answer would make each request wait its own timeout, until the
%% supervisor kills the exporter (and reports that it had to). It does not
%% start ssl: the application controller, busy stopping this application,
%% would not answer.
-spec terminate(term(), #state{}) -> ok.
terminate(_Reason, #state{config = #{export_timeout_ms := Timeout}} = State) ->
    Deadline = erlang:monotonic_time(millisecond) + min(Timeout, ?LAST_FLUSH_MS),
    {_, State1} = flush(cancel_retry(State#state{start_apps = false, deadline = Deadline})),
    _ = http_down(State1),
    ok.

%%--------------------------------------------------------------------

%% Makes sure requests can be made: with `start_apps', starts ssl for an
%% https endpoint if needed, then our httpc profile if needed.
http_up(#state{http = Pid} = State) when is_pid(Pid) ->
    {ok, State};
http_up(#state{start_apps = StartApps, config = #{traces_url := Url}} = State) ->
    try
        case StartApps of
            true -> start_apps([ssl || lists:prefix("https:", Url)]);
            false -> ok
        end,
        {ok, State#state{http = start_profile(Url), start_apps = false}}
    catch
        throw:Why -> {error, Why, State};
        Class:Reason -> {error, {Class, Reason}, State}
    end.

%% Stops our httpc profile, if it runs; its connections close with it.
http_down(#state{http = down} = State) ->
    State;
http_down(#state{http = Pid} = State) ->
    stop_profile(Pid),
    State#state{http = down}.

%% @private Stops a profile this process started (its parent), once: a
%% shutdown, which it takes as its parent's and ends with its session
%% handlers (each linked to it, and ending with it as their parent), waited
%% for. It was told to shut down and killed at once; the kill came first,
%% and each handler of a kept-alive connection died of `killed', with an
%% error report and a crash report. A profile that does not end within
%% ?PROFILE_STOP_MS (one held up in a call) is killed.
-spec stop_profile(pid()) -> ok.
stop_profile(Pid) ->
    unlink(Pid),
    Ref = erlang:monitor(process, Pid),
    %% exit(Pid, shutdown): from its parent, a stand-alone profile's stop.
    ok = inets:stop(stand_alone, Pid),
    receive
        {'DOWN', Ref, process, Pid, _} -> ok
    after ?PROFILE_STOP_MS ->
        exit(Pid, kill),
        receive {'DOWN', Ref, process, Pid, _} -> ok end
    end,
    %% An exit it made before the unlink.
    receive {'EXIT', Pid, _} -> ok after 0 -> ok end.

start_apps(Apps) ->
    lists:foreach(fun(App) ->
                          case application:ensure_all_started(App) of
                              {ok, _} -> ok;
                              {error, Why} -> throw({cannot_start, App, Why})
                          end
                  end, Apps).

%% @private A stand-alone httpc profile, linked to the exporter: it needs
%% no inets application, and stops when the exporter does.
-spec start_profile(string()) -> pid().
start_profile(Url) ->
    Pid = case inets:start(httpc, [{profile, ?HTTPC_PROFILE}], stand_alone) of
              {ok, P} -> P;
              {error, Why} -> throw(Why)
          end,
    case httpc:set_options([{max_sessions, 2}, {keep_alive_timeout, 30000},
                            {ipfamily, ip_family(Url)}],
                           Pid) of
        ok -> Pid;
        {error, Why2} -> stop_profile(Pid), throw(Why2)
    end.

%% The address family to connect with. httpc connects over IPv4 unless
%% told otherwise, and so failed every request to an endpoint at an IPv6
%% address (`http://[::1]:4318') with nxdomain. IPv6 for an IPv6 address
%% and for a host name with IPv6 addresses only (an IPv6-only cluster);
%% IPv4 otherwise, as before, rather than trying IPv6 first: a dual-stack
%% name whose IPv6 route is broken would cost each new connection its
%% connect timeout.
ip_family(Url) ->
    Host = case uri_string:parse(Url) of
               #{host := H} -> H;
               _ -> ""
           end,
    case inet:parse_ipv6strict_address(Host) of
        {ok, _} ->
            inet6;
        {error, _} ->
            case inet:getaddr(Host, inet) of
                {ok, _} ->
                    inet;
                {error, _} ->
                    case inet:getaddr(Host, inet6) of
                        {ok, _} -> inet6;
                        {error, _} -> inet
                    end
            end
    end.

schedule_tick(#state{config = #{batch_interval_ms := Interval}}) ->
    erlang:send_after(Interval, self(), tick).

drop_wakeups() ->
    receive export -> drop_wakeups() after 0 -> ok end.

cancel_retry(#state{retry_timer = undefined} = State) ->
    State;
cancel_retry(#state{retry_timer = Timer} = State) ->
    _ = erlang:cancel_timer(Timer),
    receive retry -> ok after 0 -> ok end,
    State#state{retry_timer = undefined}.

%% Exports the batches queued now (not those queued meanwhile, so that a
%% busy producer cannot keep the exporter from its other messages), unless
%% a retry is pending, or a wait a server asked for (a retry timer with
%% nothing pending). Those batches are the round: the start events in it
%% are elided against all its spans (requests/3).
export(#state{pending = [], retry_timer = undefined} = State) ->
    {Batches, Ended} = round_of(State),
    export_batches(Batches, Ended, State);
export(State) ->
    State.

export_batches(0, _Ended, State) ->
    State;
export_batches(N, Ended, State) ->
    case drain(State) of
        [] ->
            State;
        Items ->
            case send(requests(Items, Ended, State), State) of
                #state{pending = []} = State1 -> export_batches(N - 1, Ended, State1);
                %% A retry waits: the rest of the round stays in the queue
                %% (within its limits) and goes in the round after the retry.
                State1 -> State1
            end
    end.

%% The number of batches queued now and the spans among them, as a set of
%% {TraceId, SpanId}. After an outage the queue holds many batches, and a
%% start event in one may have its span in a later one: sent, already
%% overdue, it would be timed out by the collector before its span came.
%% The spans are read in place: the round's items stay in the queue, and in
%% its limits, until their batch goes. A round of one batch needs no scan.
round_of(#state{atomics = Atomics, config = #{batch_size := Batch}} = State) ->
    case (atomics:get(Atomics, ?A_SIZE) + Batch - 1) div Batch of
        Batches when Batches > 1 -> {Batches, queued_spans(Batches * Batch, State)};
        Batches -> {Batches, #{}}
    end.

%% The spans among the first Limit items of the queue. The match
%% specification returns `false' for the other items, so that Limit counts
%% items, not spans.
queued_spans(0, _State) ->
    #{};
queued_spans(Limit, #state{tab = Tab}) ->
    Spec = [{{'_', {span, '$1', '_', '_'}, '_'}, [],
             [{{{element, #dqsd_span.trace_id, '$1'}, {element, #dqsd_span.span_id, '$1'}}}]},
            {'_', [], [false]}],
    case ets:select(Tab, Spec, Limit) of
        '$end_of_table' -> #{};
        {Ids, _Continuation} -> maps:from_keys([Id || {_, _} = Id <- Ids], true)
    end.

%% Takes up to one batch from the head of the queue.
drain(#state{tab = Tab, atomics = Atomics, config = #{batch_size := Batch}}) ->
    case ets:select(Tab, [{'_', [], ['$_']}], Batch) of
        '$end_of_table' ->
            [];
        {Objects, _Continuation} ->
            Bytes = lists:foldl(fun({Key, _, Size}, Sum) ->
                                        ets:delete(Tab, Key),
                                        Sum + Size
                                end, 0, Objects),
            atomics:sub(Atomics, ?A_SIZE, length(Objects)),
            atomics:sub(Atomics, ?A_BYTES, Bytes),
            [Item || {_Key, Item, _Size} <- lists:keysort(1, Objects)]
    end.

%% One batch of queue items as requests: start events first, then spans.
%% Each kind goes in one request, or in several when it encodes to more than
%% `max_request_bytes' (the collector refuses a body beyond its own limit,
%% and every item in it would be lost); an item that is larger alone is
%% dropped and counted, and the others go without it.
%%
%% A start event whose span is in the same round (RoundEnded, from
%% round_of/1) or in the same batch is left out (counted as elided): the
%% span, which goes with it or after it, says all it would, and the start
%% event sent first could only do harm. Its instance may be overdue by the
%% time the batch goes (a batch interval longer than the probe's dMax, or a
%% backlog after the collector was away), and the collector would time it
%% out in the moment before the span's request, though the span ended in
%% time. The batch's own spans count too: an item queued in the middle of
%% the round after round_of/1 read it (its caller was descheduled between
%% taking its key and inserting it) was not seen there.
requests(Items, RoundEnded, #state{config = Config, resource = Resource} = State) ->
    #{traces_url := TracesUrl} = Config,
    Spans = [{Ctx, End, Status} || {span, Ctx, End, Status} <- Items],
    %% Looked up in both sets rather than merged into one for each batch:
    %% the round's set holds every span of a backlog.
    Ended = maps:from_keys([{T, S} || {#dqsd_span{trace_id = T, span_id = S}, _, _} <- Spans],
                           true),
    Events = [{TraceId, SpanId, Name, Start, TraceState}
              || {start, TraceId, SpanId, Name, Start, TraceState} <- Items,
                 not is_map_key({TraceId, SpanId}, Ended),
                 not is_map_key({TraceId, SpanId}, RoundEnded)],
    count(State, ?C_ELIDED_EVENTS, length(Items) - length(Spans) - length(Events)),
    Offset = erlang:time_offset(nanosecond),
    events_requests(Events, Offset, State)
    ++ encode(spans, TracesUrl, Spans, Offset, State,
              fun(Part) -> dqsd_otel_otlp:traces(Resource, Part, Offset) end).

events_requests(Events, Offset, #state{config = Config, resource = Resource} = State) ->
    Encode = case Config of
                 #{start_events := batch} ->
                     Now = erlang:system_time(nanosecond),
                     fun(Part) -> dqsd_otel_otlp:starts(Resource, Part, Offset, Now) end;
                 #{start_events := per_span} ->
                     fun(Part) -> dqsd_otel_otlp:logs(Resource, Part, Offset) end
             end,
    encode(events, maps:get(logs_url, Config), Events, Offset, State, Encode).

%% Before the pending requests are tried again, the start events in them
%% whose spans have been queued meanwhile are elided, as requests/3 elides
%% those of its round: held through an outage, they are overdue, and their
%% spans go after them, in the next round; the collector would time them
%% out in between. A request left with none is not sent; when it was the
%% head, the next is tried afresh.
elide_pending(#state{pending = [Head | Rest] = Pending, atomics = Atomics} = State) ->
    case lists:keymember(events, #dqsd_request.kind, Pending) of
        true ->
            Ended = queued_spans(atomics:get(Atomics, ?A_SIZE), State),
            Elide = fun(Request) -> elide_starts(Request, Ended, State) end,
            Rest1 = lists:flatmap(Elide, Rest),
            case Elide(Head) of
                [] -> State#state{pending = Rest1, attempt = 0};
                Head1 -> State#state{pending = Head1 ++ Rest1}
            end;
        false ->
            State
    end;
elide_pending(State) ->
    State.

%% A pending request as requests without the start events of Ended. The
%% starts left are encoded again with the time offset they were first
%% encoded with: under `+C multi_time_warp' the offset follows the system
%% clock, and one taken now, after a clock step during the outage, would
%% move their start times by the step (the monotonic stamps stay right).
elide_starts(#dqsd_request{kind = events, starts = Starts, offset = Offset} = Request, Ended,
             State) ->
    case [E || {T, S, _, _, _} = E <- Starts, not is_map_key({T, S}, Ended)] of
        Starts ->
            [Request];
        Left ->
            count(State, ?C_ELIDED_EVENTS, length(Starts) - length(Left)),
            events_requests(Left, Offset, State)
    end;
elide_starts(Request, _Ended, _State) ->
    [Request].

encode(_Kind, _Url, [], _Offset, _State, _Encode) ->
    [];
encode(Kind, Url, Items, Offset, #state{config = Config} = State, Encode) ->
    #{compression := Compression, max_request_bytes := Max} = Config,
    try iolist_to_binary(Encode(Items)) of
        Json when byte_size(Json) =< Max ->
            Body = case Compression of
                       gzip -> zlib:gzip(Json);
                       none -> Json
                   end,
            [#dqsd_request{kind = Kind, url = Url, body = Body, count = length(Items),
                      offset = Offset,
                      starts = case Kind of
                                   events -> Items;
                                   spans -> []
                               end}];
        Json when length(Items) =:= 1 ->
            ?LOG_WARNING("dqsd_otel: one ~p of ~b bytes is larger than max_request_bytes "
                         "(~b): dropped", [item(Kind), byte_size(Json), Max]),
            count(State, oversized_counter(Kind), 1),
            [];
        _ ->
            %% In halves, each encoded again: a cost of the rare batch too
            %% large, logarithmic in its length.
            {First, Second} = lists:split(length(Items) div 2, Items),
            encode(Kind, Url, First, Offset, State, Encode)
            ++ encode(Kind, Url, Second, Offset, State, Encode)
    catch
        Class:Reason:Stack ->
            %% The encoder is total; this guards against its bugs only.
            ?LOG_ERROR("dqsd_otel: cannot encode ~p: ~p", [Kind, {Class, Reason, Stack}]),
            count(State, failed_counter(Kind), length(Items)),
            []
    end.

item(spans) -> span;
item(events) -> 'start event'.

%% Sends requests in order. On a retryable failure the rest stay pending and
%% a retry is scheduled; otherwise every request is delivered or counted as
%% failed.
send([], State) ->
    State#state{pending = [], attempt = 0};
send([Request | Rest] = Requests, State0) ->
    {Result, #state{attempt = Attempt, config = Config} = State} = post(Request, State0),
    case Result of
        {ok, Accepted} ->
            {_Rejected, State1} = delivered(Request, Accepted, State),
            send(Rest, State1#state{attempt = 0});
        {drop, Why} ->
            send(Rest, (give_up(Request, Why, State))#state{attempt = 0});
        {retry, Why, RetryAfter} ->
            State1 = failing(Request, Why, State),
            Now = erlang:monotonic_time(millisecond),
            FailedAt = case Attempt of
                           0 -> Now;
                           _ -> State#state.failed_at
                       end,
            Delay = backoff(Attempt + 1, RetryAfter, Config),
            case retry_allowed(Attempt + 1, Now + Delay - FailedAt, Config) of
                true ->
                    Timer = erlang:send_after(timer_ms(Delay), self(), retry),
                    State1#state{pending = Requests, attempt = Attempt + 1,
                                 failed_at = FailedAt, retry_timer = Timer};
                false ->
                    %% give_up logs only the first failure of an outage,
                    %% which failing/3 has logged as retried: this says
                    %% the retries ran out (once a request, at most one
                    %% a max_retry_time_ms in a long outage).
                    ?LOG_WARNING("dqsd_otel: ~b ~p not exported after ~b attempts "
                                 "in ~b ms: ~0tP",
                                 [Request#dqsd_request.count, Request#dqsd_request.kind,
                                  Attempt + 1, Now - FailedAt, Why, 20]),
                    State2 = (give_up(Request, Why, State1))#state{attempt = 0},
                    case RetryAfter of
                        undefined ->
                            send(Rest, State2);
                        _ ->
                            %% The server asked for a wait beyond the budget:
                            %% the requests after this one wait it out too
                            %% (in `pending', or in the queue when there is
                            %% none), rather than go at once to a server
                            %% that said it cannot take them.
                            Timer = erlang:send_after(timer_ms(RetryAfter), self(), retry),
                            State2#state{pending = Rest, retry_timer = Timer}
                    end
            end
    end.

%% A delay as erlang:send_after/3 takes it: at most 2^32 - 1 ms (49.7
%% days), which only a Retry-After with max_retry_time_ms `infinity' can
%% reach.
timer_ms(Ms) ->
    min(Ms, 16#ffffffff).

%% Sends pending requests and what is queued now, one attempt each.
flush(State) ->
    #state{pending = Pending} = State0 = elide_pending(State),
    {Lost0, State1} = send_once(Pending, State0#state{pending = [], attempt = 0}, #{}),
    {Batches, Ended} = round_of(State1),
    {Lost, State2} = flush_batches(Batches, Ended, State1, Lost0),
    case maps:size(Lost) of
        0 -> {ok, State2};
        _ -> {{error, {not_exported, maps:merge(#{spans => 0, events => 0}, Lost)}},
              State2}
    end.

flush_batches(0, _Ended, State, Lost) ->
    {Lost, State};
flush_batches(N, Ended, State, Lost) ->
    case time_left(State) > 0 andalso drain(State) of
        %% Drained, or past the last flush's deadline: the rest stays in
        %% the queue, which goes with the application.
        Empty when Empty =:= []; Empty =:= false ->
            {Lost, State};
        Items ->
            {Lost1, State1} = send_once(requests(Items, Ended, State), State, Lost),
            flush_batches(N - 1, Ended, State1, Lost1)
    end.

send_once([], State, Lost) ->
    {Lost, State};
send_once([#dqsd_request{kind = Kind, count = Count} = Request | Rest], State0, Lost) ->
    {Result, State} = post(Request, State0),
    case Result of
        {ok, Accepted} ->
            {Rejected, State1} = delivered(Request, Accepted, State),
            send_once(Rest, State1, add_lost(Kind, Rejected, Lost));
        {drop, Why} ->
            send_once(Rest, give_up(Request, Why, State), add_lost(Kind, Count, Lost));
        {retry, Why, _} ->
            send_once(Rest, give_up(Request, Why, State), add_lost(Kind, Count, Lost))
    end.

add_lost(_Kind, 0, Lost) ->
    Lost;
add_lost(Kind, Count, Lost) ->
    maps:update_with(Kind, fun(N) -> N + Count end, Count, Lost).

%% A request the endpoint took (a 2xx answer): its items count as exported,
%% but for those the answer says it rejected (an OTLP partial success,
%% which the client must not retry), which count as failed. Returns their
%% number. The answer counts log records, and a batch start event holds
%% the starts of one probe: when only some of a request's records are
%% rejected, which ones is unknown, and their starts are counted as if
%% each record held the request's mean (rounded up).
delivered(#dqsd_request{kind = Kind, count = Count} = Request, Accepted, State0) ->
    State = recovered(State0),
    case Accepted of
        all ->
            count(State, exported_counter(Kind), Count),
            {0, State#state{rejecting = false}};
        {partial, RejectedRecords, Message} ->
            Records = records(Request, State),
            Rejected = min(Count, (Count * RejectedRecords + Records - 1) div Records),
            count(State, exported_counter(Kind), Count - Rejected),
            count(State, failed_counter(Kind), Rejected),
            case State#state.rejecting of
                true -> ok;
                false ->
                    ?LOG_WARNING("dqsd_otel: partial success, ~b of ~b ~p rejected: ~0tP",
                                 [Rejected, Count, Kind, Message, 20])
            end,
            {Rejected, State#state{rejecting = true}}
    end.

%% The number of spans or log records in a request's body.
records(#dqsd_request{kind = events, starts = Starts},
        #state{config = #{start_events := batch}}) ->
    max(1, dqsd_otel_otlp:record_count(Starts));
records(#dqsd_request{count = Count}, _State) ->
    Count.

%% How long a request may take: export_timeout_ms, or less when the last
%% flush's deadline comes sooner.
time_left(#state{deadline = infinity, config = #{export_timeout_ms := Timeout}}) ->
    Timeout;
time_left(#state{deadline = Deadline, config = #{export_timeout_ms := Timeout}}) ->
    min(Timeout, Deadline - erlang:monotonic_time(millisecond)).

%% One attempt: `{{ok, Accepted} | {drop, Why} | {retry, Why, RetryAfter}, State}',
%% Accepted `all' or `{partial, RejectedRecords, Message}' (partial_success/1).
%% None is made past the last flush's deadline.
post(Request, State0) ->
    case time_left(State0) of
        Left when Left > 0 -> attempt(Request, Left, State0);
        _ -> {{drop, last_flush_deadline}, State0}
    end.

attempt(Request, Timeout, State0) ->
    count(State0, ?C_EXPORT_REQUESTS, 1),
    case http_up(State0) of
        {ok, State} ->
            try request(Request, Timeout, State) of
                Result ->
                    {result(Result, State), State}
            catch
                %% The profile went away (noproc) or httpc failed
                %% otherwise: a failed attempt, and the profile is started
                %% again before the next one.
                Class:Reason ->
                    count(State, ?C_EXPORT_ERRORS, 1),
                    {{retry, {httpc, Class, exit_reason(Reason)}, undefined},
                     http_down(State)}
            end;
        {error, Why, State} ->
            count(State, ?C_EXPORT_ERRORS, 1),
            {{retry, {http_client_down, Why}, undefined}, State}
    end.

request(#dqsd_request{url = Url, body = Body}, Timeout,
        #state{http = Profile, headers = Headers, config = #{ssl_options := Ssl}}) ->
    HttpOptions = [{timeout, Timeout}, {connect_timeout, min(Timeout, 5000)},
                   {autoredirect, false} | [{ssl, Ssl} || Ssl =/= []]],
    case httpc:request(post, {Url, Headers, "application/json", Body}, HttpOptions,
                       [{body_format, binary}, {sync, false}, {receiver, self()}],
                       Profile) of
        {ok, RequestId} -> answer(RequestId, Timeout, Profile);
        {error, _} = Error -> Error
    end.

%% httpc's answer to a request, waited for no longer than its timeout (and
%% a margin for httpc to report its own). httpc retries a 503 whose
%% Retry-After is below 100 s by itself, again at each such answer, and
%% tells the caller nothing meanwhile: a synchronous request to an endpoint
%% that kept answering so never returned, and export stopped for good (the
%% retry budget and export_timeout_ms never came into play, flush/1 timed
%% out, stopping the application waited for the supervisor to kill the
%% exporter). A stand-alone profile drops that retry (?HTTPC_PROFILE), and
%% the attempt fails as a timeout here, to be retried (or given up) as any
%% other.
answer(RequestId, Timeout, Profile) ->
    receive
        {http, {RequestId, {error, _} = Error}} -> Error;
        {http, {RequestId, Response}} -> {ok, Response}
    %% `after' takes at most 2^32 - 1 ms; export_timeout_ms may be more.
    after min(Timeout + ?ANSWER_MARGIN_MS, 16#ffffffff) ->
        _ = httpc:cancel_request(RequestId, Profile),
        receive
            {http, {RequestId, {error, _} = Error}} -> Error;
            {http, {RequestId, Response}} -> {ok, Response}
        after 0 ->
            {error, timeout}
        end
    end.

%% The reason of a failed gen_server call without the call itself, which
%% holds the whole request body.
exit_reason({Reason, {gen_server, call, _}}) -> Reason;
exit_reason(Reason) -> Reason.

result(Result, State) ->
    case Result of
        {ok, {{_, Code, _}, _, RespBody}} when Code >= 200, Code < 300 ->
            {ok, partial_success(RespBody)};
        {ok, {{_, Code, _}, RespHeaders, _}}
          when Code =:= 429; Code =:= 502; Code =:= 503; Code =:= 504 ->
            count(State, ?C_EXPORT_ERRORS, 1),
            {retry, {http_status, Code}, retry_after(RespHeaders)};
        {ok, {{_, Code, _}, _, RespBody}} ->
            count(State, ?C_EXPORT_ERRORS, 1),
            {drop, {http_status, Code, binary:part(RespBody, 0, min(200, byte_size(RespBody)))}};
        {error, Reason} ->
            count(State, ?C_EXPORT_ERRORS, 1),
            {retry, Reason, undefined}
    end.

%% The partial_success of an ExportTraceServiceResponse or
%% ExportLogsServiceResponse in JSON (OTLP/HTTP, "Partial Success"):
%% `{partial, Rejected, Message}' when it rejects spans or log records, or
%% holds a message (a warning, with nothing rejected), else `all'. Field
%% names in either JSON form (lowerCamelCase or the proto's), a 64-bit
%% count as a string or a number. An answer that is not JSON accepts all.
partial_success(Body) when byte_size(Body) < 3 ->
    all;
partial_success(Body) ->
    Rejected = case re:run(Body, "\"rejected(?:Spans|_spans|LogRecords|_log_records)\""
                                 "\\s*:\\s*\"?([0-9]+)",
                           [{capture, all_but_first, binary}]) of
                   {match, [N]} -> binary_to_integer(N);
                   nomatch -> 0
               end,
    Message = case re:run(Body, "\"error(?:Message|_message)\"\\s*:\\s*"
                                "\"((?:[^\"\\\\]|\\\\.)*)\"",
                          [{capture, all_but_first, binary}]) of
                  {match, [M]} -> M;
                  nomatch -> <<>>
              end,
    case {Rejected, Message} of
        {0, <<>>} -> all;
        _ -> {partial, Rejected, Message}
    end.

%% Retry-After in seconds (RFC 9110 10.2.3; the date form is ignored).
retry_after(Headers) ->
    case lists:keyfind("retry-after", 1, Headers) of
        {_, Value} ->
            case string:to_integer(string:trim(Value)) of
                {Seconds, ""} when Seconds >= 0 -> Seconds * 1000;
                _ -> undefined
            end;
        false ->
            undefined
    end.

%% Delay before retry number Attempt (1, 2, ...): initial · 2^(Attempt−1),
%% capped, drawn uniformly from its upper half (jitter keeps many nodes from
%% retrying in step); at least what the server's Retry-After asked, beyond
%% the cap (OTLP/HTTP, "Throttling": the client SHOULD honour it). The cap
%% used to bound it too, and a collector that asked for 30 s got a retry
%% every 5 s; the retry budget (retry_allowed/3) bounds it now: a retry
%% that would begin after max_retry_time_ms is not made.
backoff(Attempt, RetryAfter, #{retry_backoff_ms := Initial,
                               retry_backoff_max_ms := Max}) ->
    Base = min(Initial bsl min(Attempt - 1, 30), Max),
    Half = Base div 2,
    Jittered = Half + rand:uniform(Base - Half),
    case RetryAfter of
        undefined -> Jittered;
        Ms -> max(Jittered, Ms)
    end.

%% Whether retry number Retry (1, 2, ...) may be made, At milliseconds after
%% the request's first failed attempt: when both limits allow it. A retry
%% that would begin after the time budget is not waited for, only to give
%% up then: the request is given up on at once.
retry_allowed(Retry, At, #{max_retries := MaxRetries, max_retry_time_ms := MaxTime}) ->
    within(Retry, MaxRetries) andalso within(At, MaxTime).

within(_N, infinity) -> true;
within(N, Max) -> N =< Max.

%% Counts the request's items as failed; logs only the first failure of an
%% outage (the counters have the rest).
give_up(#dqsd_request{kind = Kind, count = Count}, Why, #state{failing = Failing} = State) ->
    count(State, failed_counter(Kind), Count),
    case Failing of
        true -> ok;
        false ->
            ?LOG_WARNING("dqsd_otel: ~b ~p not exported: ~0tP", [Count, Kind, Why, 20])
    end,
    State#state{failing = true}.

failing(_Request, _Why, #state{failing = true} = State) ->
    State;
failing(#dqsd_request{url = Url}, Why, State) ->
    ?LOG_WARNING("dqsd_otel: export to ~ts failing (~0tP); retrying with backoff",
                 [Url, Why, 20]),
    State#state{failing = true}.

recovered(#state{failing = false} = State) ->
    State;
recovered(State) ->
    ?LOG_NOTICE("dqsd_otel: export recovered"),
    State#state{failing = false}.

count(#state{counters = Counters}, Index, N) ->
    counters:add(Counters, Index, N).

exported_counter(spans) -> ?C_EXPORTED_SPANS;
exported_counter(events) -> ?C_EXPORTED_EVENTS.

failed_counter(spans) -> ?C_FAILED_SPANS;
failed_counter(events) -> ?C_FAILED_EVENTS.

oversized_counter(spans) -> ?C_OVERSIZED_SPANS;
oversized_counter(events) -> ?C_OVERSIZED_EVENTS.
