%% Copyright The deltaq-otel Authors
%% SPDX-License-Identifier: Apache-2.0

%% Tests of the API and the exporter, with the application running against
%% a local HTTP server (dqsd_otel_test_http) in place of a collector.
-module(dqsd_otel_tests).

-include("dqsd_otel_test.hrl").
-include("dqsd_otel_internal.hrl").

-define(ENV_KEYS, [enabled, endpoint, service_name, resource_attributes, headers,
                   compression, ssl_options, start_events, batch_size, batch_interval_ms, queue_limit,
                   queue_max_bytes, max_request_bytes,
                   export_timeout_ms, max_retries, max_retry_time_ms, retry_backoff_ms,
                   retry_backoff_max_ms]).

%%--------------------------------------------------------------------
%% Fixtures

%% Runs Fun with the application started with Env. Exports happen only on
%% flush/0 or a full batch unless the test sets batch_interval_ms.
with_app(Env, Fun) ->
    logger:set_primary_config(level, critical),  % failures below are provoked
    unset_env(),
    Defaults = #{batch_interval_ms => 60000, retry_backoff_ms => 5,
                 retry_backoff_max_ms => 20, export_timeout_ms => 5000},
    maps:foreach(fun(K, V) -> application:set_env(dqsd_otel, K, V) end,
                 maps:merge(Defaults, Env)),
    {ok, _} = application:ensure_all_started(dqsd_otel),
    try
        Fun()
    after
        application:stop(dqsd_otel),
        unset_env(),
        dqsd_otel:set_current_span(undefined)
    end.

unset_env() ->
    [application:unset_env(dqsd_otel, K) || K <- ?ENV_KEYS],
    ok.

%% Runs Fun(Server) with the application exporting to a local server that
%% answers with Responder(N, Path).
with_server(Responder, Env, Fun) ->
    {ok, Server} = dqsd_otel_test_http:start(Responder),
    try
        with_app(Env#{endpoint => dqsd_otel_test_http:endpoint(Server)},
                 fun() -> Fun(Server) end)
    after
        dqsd_otel_test_http:stop(Server),
        %% What the exporter sent when the application stopped.
        forget_requests()
    end.

forget_requests() ->
    receive
        {dqsd_http, _, _, _, _} -> forget_requests();
        {dqsd_http_hang, _, _} -> forget_requests()
    after 0 ->
        ok
    end.

ok_200(_N, _Path) -> 200.

%% An endpoint where nothing listens: every request is refused.
refused_endpoint() ->
    {ok, Server} = dqsd_otel_test_http:start(fun ok_200/2),
    Endpoint = dqsd_otel_test_http:endpoint(Server),
    dqsd_otel_test_http:stop(Server),
    Endpoint.

%% The next N requests, in arrival order, as {Path, Body}.
received(N) ->
    [receive
         {dqsd_http, _, Path, _Headers, Body} -> {Path, Body}
     after 5000 ->
         error({missing_request, I, N})
     end || I <- lists:seq(1, N)].

nothing_more_received() ->
    receive
        {dqsd_http, _, Path, _, _} = M -> error({unexpected_request, Path, M})
    after 50 ->
        ok
    end.

decode(Body) -> dqsd_otel_test_json:decode(Body).

spans(Body) ->
    #{<<"resourceSpans">> := [#{<<"scopeSpans">> := [#{<<"spans">> := Spans}]}]} =
        decode(Body),
    Spans.

events(Body) ->
    #{<<"resourceLogs">> := [#{<<"scopeLogs">> := [#{<<"logRecords">> := Records}]}]} =
        decode(Body),
    Records.

%% The starts a logs request announces, in either form, in order (by record,
%% then by entry), each as #{probe, trace_id, span_id (hex), start (Unix
%% nanoseconds), threshold (0 for none)}.
starts(Body) ->
    lists:append([record_starts(R) || R <- events(Body)]).

record_starts(#{<<"eventName">> := <<"deltaq.span.starts">>} = R) ->
    #{<<"deltaq.probe">> := #{<<"stringValue">> := Probe},
      <<"deltaq.starts">> := #{<<"bytesValue">> := Starts}} = A = attrs(R),
    Thresholds = case A of
                     #{<<"deltaq.starts.thresholds">> := #{<<"bytesValue">> := T}} ->
                         [Th || <<Th:64/little-unsigned>> <= base64:decode(T)];
                     #{} ->
                         infinite
                 end,
    Entries = [#{probe => Probe, trace_id => dqsd_otel_otlp:hex(TraceId),
                 span_id => dqsd_otel_otlp:hex(SpanId), start => Start}
               || <<TraceId:16/binary, SpanId:8/binary, Start:64/little-unsigned>>
                      <= base64:decode(Starts)],
    case Thresholds of
        infinite -> [E#{threshold => 0} || E <- Entries];
        _ -> [E#{threshold => Th} || {E, Th} <- lists:zip(Entries, Thresholds)]
    end;
record_starts(#{<<"eventName">> := <<"deltaq.span.start">>} = R) ->
    #{<<"deltaq.probe">> := #{<<"stringValue">> := Probe}} = A = attrs(R),
    TraceState = case A of
                     #{<<"deltaq.tracestate">> := #{<<"stringValue">> := TS}} -> TS;
                     #{} -> <<>>
                 end,
    [#{probe => Probe, trace_id => maps:get(<<"traceId">>, R),
       span_id => maps:get(<<"spanId">>, R),
       start => binary_to_integer(maps:get(<<"timeUnixNano">>, R)),
       threshold => dqsd_otel_tracecontext:threshold(TraceState)}].

attrs(Object) ->
    maps:from_list([{K, V} || #{<<"key">> := K, <<"value">> := V}
                                  <- maps:get(<<"attributes">>, Object)]).

by_name(Spans) ->
    maps:from_list([{maps:get(<<"name">>, S), S} || S <- Spans]).

%% Polls Pred until it holds (at most 5 s): for state reached by the
%% exporter's own timers.
wait_until(Pred) ->
    wait_until(Pred, 500).

wait_until(Pred, 0) ->
    error({condition_never_held, Pred(), dqsd_otel:stats()});
wait_until(Pred, N) ->
    case Pred() of
        true -> ok;
        false -> timer:sleep(10), wait_until(Pred, N - 1)
    end.

stat(Key) -> maps:get(Key, dqsd_otel:stats()).

%%--------------------------------------------------------------------
%% Spans, start events and their ids

start_end_test() ->
    with_server(fun ok_200/2, #{}, fun(_) ->
        Before = erlang:system_time(nanosecond),
        Ctx = dqsd_otel:start_span(<<"worker_1">>, #{<<"job">> => 7}),
        Started = erlang:system_time(nanosecond),
        %% The start event goes alone while the span is open, to /v1/logs,
        %% in a batch record.
        ?assertEqual(ok, dqsd_otel:flush()),
        Flushed = erlang:system_time(nanosecond),
        [{<<"/v1/logs">>, Logs}] = received(1),
        ok = dqsd_otel:end_span(Ctx),
        After = erlang:system_time(nanosecond),
        ?assertEqual(ok, dqsd_otel:flush()),
        [{<<"/v1/traces">>, Traces}] = received(1),
        [Event] = events(Logs),
        [Span] = spans(Traces),
        TraceId = dqsd_otel:trace_id(Ctx),
        SpanId = dqsd_otel:span_id(Ctx),
        ?assertMatch(<<_:32/binary>>, TraceId),
        ?assertMatch(<<_:16/binary>>, SpanId),
        ?assertEqual(<<"deltaq.span.starts">>, maps:get(<<"eventName">>, Event)),
        ?assertNot(maps:is_key(<<"traceId">>, Event) orelse maps:is_key(<<"spanId">>, Event)),
        %% The record's time is the export's.
        Exported = binary_to_integer(maps:get(<<"timeUnixNano">>, Event)),
        ?assert(Started =< Exported andalso Exported =< Flushed),
        ?assertEqual([<<"deltaq.probe">>, <<"deltaq.starts">>], lists:sort(maps:keys(attrs(Event)))),
        [#{probe := <<"worker_1">>, trace_id := TraceId, span_id := SpanId, start := EventStart,
           threshold := 0}] = starts(Logs),
        ?assertEqual(TraceId, maps:get(<<"traceId">>, Span)),
        ?assertEqual(SpanId, maps:get(<<"spanId">>, Span)),
        ?assertNot(maps:is_key(<<"parentSpanId">>, Span)),
        ?assertNot(maps:is_key(<<"status">>, Span)),
        ?assertEqual(#{<<"job">> => #{<<"intValue">> => <<"7">>}}, attrs(Span)),
        %% One start stamp serves the event and the span.
        Start = binary_to_integer(maps:get(<<"startTimeUnixNano">>, Span)),
        End = binary_to_integer(maps:get(<<"endTimeUnixNano">>, Span)),
        ?assertEqual(Start, EventStart),
        ?assert(Before =< Start andalso Start =< End andalso End =< After),
        ?assertMatch(#{queued := 0, exported_spans := 1, exported_events := 1,
                       dropped_spans := 0, failed_spans := 0, export_requests := 2,
                       elided_events := 0},
                     dqsd_otel:stats())
    end).

%% A start event whose span ends before the batch goes is not sent: the
%% span says all it would. Sent first, it could time its instance out
%% before the span arrived (a backlog after the collector was away made
%% 243 instances of the M/M/1/K example timeouts). Starts of spans still
%% open go, in the same batch as the spans that ended. Across the batches
%% of a round: start_elided_when_span_in_round_test.
start_elided_when_span_in_batch_test() ->
    with_server(fun ok_200/2, #{}, fun(_) ->
        Open = dqsd_otel:start_span(<<"open">>),
        dqsd_otel:end_span(dqsd_otel:start_span(<<"done">>)),
        dqsd_otel:fail_span(dqsd_otel:start_span(<<"failed">>), oops),
        ok = dqsd_otel:flush(),
        [{<<"/v1/logs">>, Logs}, {<<"/v1/traces">>, Traces}] = received(2),
        OpenId = dqsd_otel:span_id(Open),
        ?assertMatch([#{probe := <<"open">>, span_id := OpenId}], starts(Logs)),
        ?assertEqual([<<"done">>, <<"failed">>],
                     lists:sort([maps:get(<<"name">>, S) || S <- spans(Traces)])),
        ?assertMatch(#{exported_events := 1, elided_events := 2, exported_spans := 2},
                     dqsd_otel:stats()),
        %% Ended in a later batch, the open span goes alone; a batch of
        %% spans only is one request.
        dqsd_otel:end_span(Open),
        ok = dqsd_otel:flush(),
        [{<<"/v1/traces">>, Later}] = received(1),
        ?assertMatch([#{<<"spanId">> := OpenId}], spans(Later)),
        nothing_more_received(),
        ?assertMatch(#{exported_events := 1, elided_events := 2, exported_spans := 3,
                       export_requests := 3},
                     dqsd_otel:stats())
    end).

%% After an outage the queue holds several batches, and a start event in
%% one may have its span in a later one: sent, already overdue, it would be
%% timed out before its span came. The starts of a round (the batches
%% queued when it begins) are elided against all its spans. Here the
%% collector refuses (503) until released, while a backlog of four batches
%% of four forms: [s1 s2 s3 s4] [s5 s6 open e1] [e2 e3 e4 e5] [e6]. The
%% start of `open', whose span is still running, goes; each batch goes as
%% its starts, then its spans.
start_elided_when_span_in_round_test() ->
    Gate = atomics:new(1, []),
    with_server(refuse_until(Gate), #{batch_size => 4, batch_interval_ms => 20,
                                      max_retries => 1000},
                fun(_) ->
        Running = dqsd_otel:start_span(<<"running">>),
        wait_until(fun() -> stat(export_errors) > 0 end),
        Ss = [dqsd_otel:start_span(<<"s", (integer_to_binary(I))/binary>>)
              || I <- lists:seq(1, 6)],
        Open = dqsd_otel:start_span(<<"open">>),
        [dqsd_otel:end_span(S) || S <- Ss],
        ?assertEqual(13, stat(queued)),
        atomics:put(Gate, 1, 1),
        wait_until(fun() -> stat(exported_spans) =:= 6 end),
        ?assertEqual([{logs, [<<"running">>]},
                      {logs, [<<"open">>]}, {traces, [<<"s1">>]},
                      {traces, [<<"s2">>, <<"s3">>, <<"s4">>, <<"s5">>]},
                      {traces, [<<"s6">>]}],
                     accepted(collect_numbered())),
        ?assertMatch(#{exported_events := 2, elided_events := 6, exported_spans := 6,
                       failed_events := 0, failed_spans := 0, queued := 0},
                     dqsd_otel:stats()),
        %% Their starts sent, the two spans still running go alone.
        dqsd_otel:end_span(Running),
        dqsd_otel:end_span(Open),
        ok = dqsd_otel:flush(),
        ?assertEqual([{traces, [<<"running">>, <<"open">>]}], accepted(collect_numbered())),
        ?assertMatch(#{exported_events := 2, elided_events := 6, exported_spans := 8},
                     dqsd_otel:stats())
    end).

%% A retry in the middle of a round: the requests of its batch go again, in
%% order, and the rest of the round, left in the queue, goes after them,
%% its starts still elided against the spans queued with them. The first
%% request waits (the collector is slow) while a backlog of four batches of
%% three forms: [s1 s2 s3] [o1 e1 s4] [e2 s5 e3] [e4 e5]; the spans of the
%% second batch are refused twice.
retry_mid_round_test() ->
    Responder = fun(1, _) -> hang; (N, _) when N =:= 3; N =:= 4 -> 503; (_, _) -> 200 end,
    with_server(Responder, #{batch_size => 3, batch_interval_ms => 20}, fun(_) ->
        _Running = dqsd_otel:start_span(<<"running">>),
        Handler = receive {dqsd_http_hang, 1, H} -> H after 5000 -> error(no_request) end,
        [S1, S2, S3] = [dqsd_otel:start_span(N) || N <- [<<"s1">>, <<"s2">>, <<"s3">>]],
        _O1 = dqsd_otel:start_span(<<"o1">>),
        dqsd_otel:end_span(S1),
        S4 = dqsd_otel:start_span(<<"s4">>),
        dqsd_otel:end_span(S2),
        S5 = dqsd_otel:start_span(<<"s5">>),
        [dqsd_otel:end_span(S) || S <- [S3, S4, S5]],
        ?assertEqual(11, stat(queued)),
        Handler ! release,
        wait_until(fun() -> stat(exported_spans) =:= 5 end),
        Requests = collect_numbered(),
        E1 = {traces, [<<"s1">>]},
        ?assertEqual([{logs, [<<"running">>]}, {logs, [<<"o1">>]}, E1, E1, E1,
                      {traces, [<<"s2">>, <<"s3">>]}, {traces, [<<"s4">>, <<"s5">>]}],
                     [Request || {_N, Request} <- Requests]),
        ?assertMatch(#{exported_events := 2, elided_events := 5, exported_spans := 5,
                       export_errors := 2, failed_events := 0, failed_spans := 0,
                       queued := 0},
                     dqsd_otel:stats())
    end).

%% A request of start events that waits out an outage holds starts that
%% are overdue when it goes; those whose spans were queued meanwhile are
%% elided before it is tried again, as their round would have elided them.
%% Here `a' and `c' start, their starts are refused, `a' ends: the retry
%% sends the start of `c' alone, then the round the span of `a'.
start_elided_when_span_queued_during_retry_test() ->
    Gate = atomics:new(1, []),
    with_server(refuse_until(Gate), #{batch_interval_ms => 20, max_retries => 1000},
                fun(_) ->
        A = dqsd_otel:start_span(<<"a">>),
        _C = dqsd_otel:start_span(<<"c">>),
        wait_until(fun() -> stat(export_errors) > 0 end),
        dqsd_otel:end_span(A),
        %% An attempt under way when `a' ended was made before: the gate
        %% opens once a later one has been refused too, so that the
        %% attempt it lets through was made with `a' queued (on a busy
        %% machine the one under way could reach the server after the gate
        %% opened, with the start of `a').
        Errors = stat(export_errors),
        wait_until(fun() -> stat(export_errors) >= Errors + 2 end),
        atomics:put(Gate, 1, 1),
        wait_until(fun() -> stat(exported_spans) =:= 1 end),
        ?assertEqual([{logs, [<<"c">>]}, {traces, [<<"a">>]}], accepted(collect_numbered())),
        ?assertMatch(#{exported_events := 1, elided_events := 1, exported_spans := 1,
                       failed_events := 0, queued := 0},
                     dqsd_otel:stats())
    end).

%% A pending request of start events encoded again for its retry (some of
%% its starts elided) keeps the time offset it was first encoded with: the
%% starts left keep the times they had. Under `+C multi_time_warp' the
%% offset follows the system clock, and one taken at the retry, after a
%% step of the clock during the outage, moved them by the step. The clock
%% of a test cannot be stepped: the pending request is made one encoded
%% before a step of one second (its offset a second off the present one),
%% and the start left must be sent a second off the time it was first sent
%% with.
retried_starts_keep_their_offset_test_() ->
    [{atom_to_list(Form), fun() -> retried_starts_keep_their_offset(Form) end}
     || Form <- [batch, per_span]].

retried_starts_keep_their_offset(Form) ->
    Step = 1000000000,
    with_server(fun(1, _) -> 503; (_, _) -> 200 end,
                #{start_events => Form, retry_backoff_ms => 30000, retry_backoff_max_ms => 30000,
                  max_retry_time_ms => 60000},
                fun(_) ->
        A = dqsd_otel:start_span(<<"a">>),
        _C = dqsd_otel:start_span(<<"c">>),
        dqsd_otel_exporter ! export,
        [{<<"/v1/logs">>, Refused}] = received(1),
        #{<<"c">> := First} = maps:from_list([{P, S} || #{probe := P, start := S} <- starts(Refused)]),
        _ = sys:replace_state(dqsd_otel_exporter, fun(S) -> step_pending(S, Step) end),
        dqsd_otel:end_span(A),
        %% The retry, at once: the start of `a' elided, that of `c' encoded again.
        ok = dqsd_otel:flush(),
        [{<<"/v1/logs">>, Retried}, {<<"/v1/traces">>, _}] = received(2),
        ?assertEqual([{<<"c">>, First + Step}], [{P, S} || #{probe := P, start := S} <- starts(Retried)]),
        ?assertMatch(#{exported_events := 1, elided_events := 1, exported_spans := 1},
                     dqsd_otel:stats())
    end).

%% The exporter's state with the time offset of each pending request moved
%% by Step (the pending requests are the state's one list of requests).
step_pending(State, Step) ->
    list_to_tuple([case Field of
                       [#dqsd_request{} | _] ->
                           [R#dqsd_request{offset = O + Step} || #dqsd_request{offset = O} = R <- Field];
                       _ ->
                           Field
                   end || Field <- tuple_to_list(State)]).

%% Answers 503 while Gate is 0, telling the test process which requests
%% it refused; then 200.
refuse_until(Gate) ->
    Self = self(),
    fun(N, _Path) ->
            case atomics:get(Gate, 1) of
                0 -> Self ! {refused, N}, 503;
                _ -> 200
            end
    end.

%% The requests received so far (within 100 ms of each other), in order,
%% each as {N, {logs | traces, Names}}: the names of the probes it starts
%% or of its spans.
collect_numbered() ->
    receive
        {dqsd_http, N, Path, _, Body} ->
            Kind = case Path of
                       <<"/v1/logs">> -> logs;
                       <<"/v1/traces">> -> traces
                   end,
            [{N, {Kind, [name(Path, R) || R <- records(Path, Body)]}} | collect_numbered()]
    after 100 ->
        []
    end.

%% The requests of those that refuse_until/1 did not refuse.
accepted(Requests) ->
    [Request || {N, Request} <- Requests,
                receive {refused, N} -> false after 0 -> true end].

parent_child_test() ->
    with_server(fun ok_200/2, #{}, fun(_) ->
        Self = self(),
        Result = dqsd_otel:with_span(<<"end_to_end">>, fun() ->
            Outer = dqsd_otel:current_span(),
            Inner = dqsd_otel:start_span(<<"worker_1">>),
            %% start_span does not change the current span.
            ?assertEqual(Outer, dqsd_otel:current_span()),
            dqsd_otel:end_span(Inner),
            dqsd_otel:with_span(<<"nested">>, fun() -> ok end),
            %% A worker process gets the context explicitly.
            Pid = spawn_link(fun() ->
                undefined = dqsd_otel:set_current_span(Outer),
                dqsd_otel:end_span(dqsd_otel:start_span(<<"worker_2">>)),
                Self ! {worker_done, self()}
            end),
            receive {worker_done, Pid} -> ok end,
            {result, dqsd_otel:trace_id(Outer), dqsd_otel:span_id(Outer)}
        end),
        {result, TraceId, OuterId} = Result,
        ?assertEqual(undefined, dqsd_otel:current_span()),
        Root2 = dqsd_otel:start_span(<<"other_root">>),
        dqsd_otel:end_span(Root2),
        ok = dqsd_otel:flush(),
        [{<<"/v1/traces">>, Traces}] = received(1),
        S = by_name(spans(Traces)),
        ?assertEqual(5, maps:size(S)),
        %% All ended before the flush: no start event is needed.
        ?assertMatch(#{elided_events := 5, exported_events := 0}, dqsd_otel:stats()),
        #{<<"end_to_end">> := E2E, <<"worker_1">> := W1, <<"nested">> := N,
          <<"worker_2">> := W2, <<"other_root">> := R2} = S,
        ?assertEqual(OuterId, maps:get(<<"spanId">>, E2E)),
        ?assertNot(maps:is_key(<<"parentSpanId">>, E2E)),
        [?assertEqual({TraceId, OuterId},
                      {maps:get(<<"traceId">>, Child), maps:get(<<"parentSpanId">>, Child)})
         || Child <- [W1, N, W2]],
        ?assertNotEqual(TraceId, maps:get(<<"traceId">>, R2)),
        ?assertNot(maps:is_key(<<"parentSpanId">>, R2)),
        SpanIds = [maps:get(<<"spanId">>, X) || X <- maps:values(S)],
        ?assertEqual(5, length(lists:usort(SpanIds)))
    end).

%% Ids come from per-process generators: many processes, no repeats.
unique_ids_test() ->
    with_app(#{endpoint => refused_endpoint(), queue_limit => 1}, fun() ->
        Self = self(),
        Pids = [spawn_link(fun() ->
                                   Ids = [begin
                                              C = dqsd_otel:start_span(<<"s">>),
                                              {dqsd_otel:trace_id(C), dqsd_otel:span_id(C)}
                                          end || _ <- lists:seq(1, 50)],
                                   Self ! {ids, self(), Ids}
                           end) || _ <- lists:seq(1, 200)],
        All = lists:append([receive {ids, P, Ids} -> Ids end || P <- Pids]),
        ?assertEqual(10000, length(lists:usort([T || {T, _} <- All]))),
        ?assertEqual(10000, length(lists:usort([S || {_, S} <- All])))
    end).

set_current_span_test() ->
    with_server(fun ok_200/2, #{}, fun(_) ->
        A = dqsd_otel:start_span(a),
        ?assertEqual(undefined, dqsd_otel:set_current_span(A)),
        B = dqsd_otel:start_span(b),
        ?assertEqual(A, dqsd_otel:set_current_span(undefined)),
        ?assertEqual(undefined, dqsd_otel:current_span()),
        ?assertEqual(dqsd_otel:trace_id(A), dqsd_otel:trace_id(B))
    end).

%%--------------------------------------------------------------------
%% W3C trace context across services

%% The example of the W3C Recommendation "Trace Context", section
%% "Relationship Between the Headers": a request traced by Congo.
-define(CONGO_TRACE, <<"0af7651916cd43dd8448eb211c80319c">>).
-define(CONGO_PARENT, <<"b7ad6b7169203331">>).
-define(CONGO_HEADERS(Flags),
        [{"host", "localhost"},
         {"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-" ++ Flags},
         {"tracestate", "congo=t61rcWkgMzE"}]).

%% A handler continues the caller's trace: its span is the remote parent's
%% child, spans inside it are its children, and what it injects into a
%% downstream request names it as the parent.
remote_parent_test() ->
    with_server(fun ok_200/2, #{}, fun(_) ->
        Remote = dqsd_otel:extract(?CONGO_HEADERS("01")),
        ?assertEqual(?CONGO_TRACE, dqsd_otel:trace_id(Remote)),
        ?assertEqual(?CONGO_PARENT, dqsd_otel:span_id(Remote)),
        %% The remote context is no span of ours: ending it exports nothing.
        ok = dqsd_otel:end_span(Remote),
        {HandlerId, Downstream} =
            dqsd_otel:with_span(<<"handler">>, #{}, Remote, fun() ->
                dqsd_otel:with_span(<<"db">>, fun() -> ok end),
                Current = dqsd_otel:current_span(),
                {dqsd_otel:span_id(Current), dqsd_otel:inject(Current, [{"accept", "*/*"}])}
            end),
        %% with_span/4 leaves no context behind in the process.
        ?assertEqual(undefined, dqsd_otel:current_span()),
        ?assertEqual([{"accept", "*/*"},
                      {"traceparent", binary_to_list(<<"00-", ?CONGO_TRACE/binary, "-",
                                                       HandlerId/binary, "-01">>)},
                      {"tracestate", "congo=t61rcWkgMzE"}],
                     Downstream),
        ok = dqsd_otel:flush(),
        [{<<"/v1/traces">>, Traces}] = received(1),
        ?assertEqual(2, stat(elided_events)),
        #{<<"handler">> := H, <<"db">> := D} = S = by_name(spans(Traces)),
        ?assertEqual(2, maps:size(S)),
        ?assertMatch(#{<<"traceId">> := ?CONGO_TRACE, <<"spanId">> := HandlerId,
                       <<"parentSpanId">> := ?CONGO_PARENT,
                       <<"traceState">> := <<"congo=t61rcWkgMzE">>,
                       %% 0x100 + 0x200 (remote parent) + 0x01 (sampled).
                       <<"flags">> := 16#301}, H),
        ?assertMatch(#{<<"traceId">> := ?CONGO_TRACE, <<"parentSpanId">> := HandlerId,
                       <<"traceState">> := <<"congo=t61rcWkgMzE">>,
                       <<"flags">> := 16#101}, D)
    end).

%% A caller that did not sample its request: the span is still recorded
%% (every outcome instance counts for the ΔQ), and the unsampled flag is
%% passed on unchanged, for the services downstream to decide as the
%% caller did.
unsampled_remote_parent_test() ->
    with_server(fun ok_200/2, #{}, fun(_) ->
        Remote = dqsd_otel:extract(?CONGO_HEADERS("00")),
        Ctx = dqsd_otel:start_span(<<"handler">>, #{}, Remote),
        ?assertMatch(#{<<"traceparent">> := <<"00-0af7651916cd43dd8448eb211c80319c-", _:16/binary, "-00">>},
                     dqsd_otel:inject(Ctx, #{})),
        ok = dqsd_otel:end_span(Ctx),
        ok = dqsd_otel:flush(),
        [{<<"/v1/traces">>, Traces}] = received(1),
        ?assertMatch([#{<<"traceId">> := ?CONGO_TRACE, <<"parentSpanId">> := ?CONGO_PARENT,
                        <<"flags">> := 16#300}], spans(Traces))
    end).

%% Switched off, the library records nothing but still passes the caller's
%% context on: a downstream request continues the caller's trace, with the
%% caller's span as its parent.
disabled_passes_context_on_test() ->
    with_server(fun ok_200/2, #{enabled => false}, fun(_) ->
        Remote = dqsd_otel:extract(?CONGO_HEADERS("01")),
        Headers = dqsd_otel:with_span(<<"handler">>, #{}, Remote, fun() ->
            dqsd_otel:inject(dqsd_otel:start_span(<<"client">>), [])
        end),
        ?assertEqual(dqsd_otel_tracecontext:inject(
                       {binary:decode_hex(?CONGO_TRACE), binary:decode_hex(?CONGO_PARENT), 1,
                        <<"congo=t61rcWkgMzE">>}, []),
                     Headers),
        ?assertEqual(0, stat(queued)),
        ok = dqsd_otel:flush(),
        nothing_more_received()
    end).

%% inject/2 given headers that are neither a proper list nor a map raises badarg,
%% for a recording span, a remote parent, a span started while switched off
%% and no context alike: the caller's mistake shows before the library is
%% switched on, not as an if_clause once it is.
inject_not_headers_test() ->
    with_server(fun ok_200/2, #{}, fun(_) ->
        Recording = dqsd_otel:start_span(<<"client">>),
        Remote = dqsd_otel:extract(?CONGO_HEADERS("01")),
        ok = dqsd_otel:disable(),
        Off = dqsd_otel:start_span(<<"off">>),
        [?assertException(error, badarg, dqsd_otel:inject(Ctx, NotHeaders))
         || Ctx <- [Recording, Remote, Off, undefined],
            NotHeaders <- [undefined, <<"accept: */*">>, {"accept", "*/*"},
                           [{"accept", "*/*"} | {"x", "y"}]]],
        ?assertMatch([{"accept", "*/*"}, {"traceparent", _}],
                     dqsd_otel:inject(Recording, [{"accept", "*/*"}]))
    end).

%% An explicit parent wins over the current span; `undefined' starts a new
%% trace; a request without (valid) trace context gives none.
explicit_parent_test() ->
    with_server(fun ok_200/2, #{}, fun(_) ->
        ?assertEqual(undefined, dqsd_otel:extract([{"accept", "*/*"}])),
        ?assertEqual(undefined, dqsd_otel:extract(
                                  [{"traceparent", "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01"}])),
        ?assertEqual([{"accept", "*/*"}], dqsd_otel:inject(undefined, [{"accept", "*/*"}])),
        Remote = dqsd_otel:extract(?CONGO_HEADERS("01")),
        dqsd_otel:with_span(<<"outer">>, fun() ->
            Child = dqsd_otel:start_span(<<"child">>, #{}, Remote),
            Root = dqsd_otel:start_span(<<"root">>, #{}, undefined),
            ?assertEqual(?CONGO_TRACE, dqsd_otel:trace_id(Child)),
            ?assertNotEqual(?CONGO_TRACE, dqsd_otel:trace_id(Root)),
            ?assertNotEqual(dqsd_otel:trace_id(dqsd_otel:current_span()), dqsd_otel:trace_id(Root)),
            dqsd_otel:end_span(Child),
            dqsd_otel:end_span(Root)
        end),
        ok = dqsd_otel:flush(),
        [{<<"/v1/traces">>, Traces}] = received(1),
        #{<<"child">> := C, <<"root">> := R} = by_name(spans(Traces)),
        ?assertEqual(?CONGO_PARENT, maps:get(<<"parentSpanId">>, C)),
        ?assertNot(maps:is_key(<<"parentSpanId">>, R)),
        ?assertEqual(16#101, maps:get(<<"flags">>, R))
    end).

%%--------------------------------------------------------------------
%% Failure and exception paths

fail_span_test() ->
    with_server(fun ok_200/2, #{}, fun(_) ->
        dqsd_otel:fail_span(dqsd_otel:start_span(<<"with_reason">>), <<"queue full">>),
        dqsd_otel:fail_span(dqsd_otel:start_span(<<"without_reason">>)),
        dqsd_otel:end_span(dqsd_otel:start_span(<<"succeeded">>)),
        ok = dqsd_otel:flush(),
        [{<<"/v1/traces">>, Traces}] = received(1),
        #{<<"with_reason">> := R, <<"without_reason">> := W, <<"succeeded">> := OK} =
            by_name(spans(Traces)),
        ?assertEqual(#{<<"code">> => 2, <<"message">> => <<"queue full">>},
                     maps:get(<<"status">>, R)),
        ?assertEqual(#{<<"code">> => 2}, maps:get(<<"status">>, W)),
        Failed = #{<<"deltaq.failed">> => #{<<"boolValue">> => true}},
        ?assertEqual(Failed, attrs(R)),
        ?assertEqual(Failed, attrs(W)),
        ?assertNot(maps:is_key(<<"status">>, OK)),
        ?assertEqual(#{}, attrs(OK))
    end).

with_span_exception_test() ->
    with_server(fun ok_200/2, #{}, fun(_) ->
        Raise = fun(error) -> erlang:error(badarith);
                   (throw) -> throw(ball);
                   (exit) -> exit(bye)
                end,
        Cases = [{error, badarith}, {throw, ball}, {exit, bye}],
        lists:foreach(
          fun({Class, Reason}) ->
                  Name = atom_to_binary(Class, utf8),
                  try dqsd_otel:with_span(Name, #{}, fun() -> Raise(Class) end) of
                      V -> error({no_exception, V})
                  catch
                      Class:Reason:Stack ->
                          %% The stack trace is the one raised in the fun.
                          [{?MODULE, F, _, _} | _] = Stack,
                          ?assertMatch("-with_span_exception_test/0-" ++ _,
                                       atom_to_list(F))
                  end,
                  ?assertEqual(undefined, dqsd_otel:current_span())
          end, Cases),
        ?assertEqual(42, dqsd_otel:with_span(<<"ok">>, fun() -> 42 end)),
        ok = dqsd_otel:flush(),
        [{<<"/v1/traces">>, Traces}] = received(1),
        S = by_name(spans(Traces)),
        [begin
             Span = maps:get(atom_to_binary(Class, utf8), S),
             Message = iolist_to_binary([atom_to_binary(Class, utf8), ":",
                                         atom_to_binary(Reason, utf8)]),
             ?assertEqual(#{<<"code">> => 2, <<"message">> => Message},
                          maps:get(<<"status">>, Span)),
             ?assertEqual(#{<<"boolValue">> => true},
                          maps:get(<<"deltaq.failed">>, attrs(Span))),
             [Event] = maps:get(<<"events">>, Span),
             ?assertEqual(<<"exception">>, maps:get(<<"name">>, Event))
         end || {Class, Reason} <- Cases],
        ?assertNot(maps:is_key(<<"status">>, maps:get(<<"ok">>, S)))
    end).

%%--------------------------------------------------------------------
%% The on/off switch

%% Start events of several probes, some spans with a sampling threshold in
%% their tracestate, in both forms. The batch form (the default): one
%% record per probe, in the order of the probes' first spans, each entry
%% with its span's ids and start, the thresholds only on the record of the
%% probe with a sampled span. With `start_events => per_span': one record
%% per span, in starting order, with its span's ids, start as time, and
%% tracestate.
start_event_forms_test_() ->
    [{atom_to_list(Form), fun() -> start_event_forms(Form) end} || Form <- [batch, per_span]].

start_event_forms(Form) ->
    with_server(fun ok_200/2, #{start_events => Form}, fun(_) ->
        Sampled = dqsd_otel:extract([{<<"traceparent">>, <<"00-", ?CONGO_TRACE/binary, "-",
                                                          ?CONGO_PARENT/binary, "-01">>},
                                     {<<"tracestate">>, <<"congo=t61rcWkgMzE,ot=th:c">>}]),
        Spans = [{Name, dqsd_otel:start_span(Name, #{}, Parent)}
                 || {Name, Parent} <- [{<<"a">>, undefined}, {<<"b">>, Sampled},
                                       {<<"a">>, undefined}, {<<"c">>, undefined},
                                       {<<"b">>, undefined}, {<<"a">>, Sampled}]],
        %% Sent while the spans are open (a start whose span ends in the
        %% same export round is not sent).
        ok = dqsd_otel:flush(),
        [{<<"/v1/logs">>, Logs}] = received(1),
        [dqsd_otel:end_span(Ctx) || {_, Ctx} <- Spans],
        ok = dqsd_otel:flush(),
        [{<<"/v1/traces">>, Traces}] = received(1),
        Starts = maps:from_list([{maps:get(<<"spanId">>, S),
                                  binary_to_integer(maps:get(<<"startTimeUnixNano">>, S))}
                                 || S <- spans(Traces)]),
        Want = fun(Name, Ctx) ->
                       SpanId = dqsd_otel:span_id(Ctx),
                       #{probe => Name, trace_id => dqsd_otel:trace_id(Ctx), span_id => SpanId,
                         start => maps:get(SpanId, Starts),
                         threshold => case dqsd_otel:trace_id(Ctx) of
                                          ?CONGO_TRACE -> 16#c0000000000000;
                                          _ -> 0
                                      end}
               end,
        Records = events(Logs),
        case Form of
            batch ->
                ?assertEqual([<<"deltaq.span.starts">>], lists:usort([maps:get(<<"eventName">>, R)
                                                                      || R <- Records])),
                ?assertEqual([<<"a">>, <<"b">>, <<"c">>], [name(<<"/v1/logs">>, hd(record_starts(R)))
                                                           || R <- Records]),
                ?assertEqual([true, true, false],
                             [maps:is_key(<<"deltaq.starts.thresholds">>, attrs(R)) || R <- Records]),
                ?assertEqual([Want(N, C) || P <- [<<"a">>, <<"b">>, <<"c">>], {N, C} <- Spans, N =:= P],
                             starts(Logs));
            per_span ->
                ?assertEqual(lists:duplicate(6, <<"deltaq.span.start">>),
                             [maps:get(<<"eventName">>, R) || R <- Records]),
                ?assertEqual([Want(N, C) || {N, C} <- Spans], starts(Logs)),
                ?assertEqual([case maps:get(<<"traceId">>, R) of
                                  ?CONGO_TRACE -> [<<"deltaq.probe">>, <<"deltaq.span.name">>,
                                                   <<"deltaq.tracestate">>];
                                  _ -> [<<"deltaq.probe">>, <<"deltaq.span.name">>]
                              end || R <- Records],
                             [lists:sort(maps:keys(attrs(R))) || R <- Records])
        end,
        ?assertMatch(#{exported_events := 6, exported_spans := 6}, dqsd_otel:stats())
    end).

%% A span with an empty name names no probe (the span name is its probe):
%% it has no start event, in either form, since the collector refuses a
%% batch record with an empty `deltaq.probe' whole
%% (docs/contract/start-event.json), and a collector has no probe of that
%% name. The span itself is exported.
empty_name_test_() ->
    [{atom_to_list(Form), fun() -> empty_name(Form) end} || Form <- [batch, per_span]].

empty_name(Form) ->
    with_server(fun ok_200/2, #{start_events => Form}, fun(_) ->
        Ctxs = [dqsd_otel:start_span(Name) || Name <- [<<>>, <<"a">>, "", '']],
        ok = dqsd_otel:flush(),
        [{<<"/v1/logs">>, Logs}] = received(1),
        ?assertEqual([<<"a">>], [Probe || #{probe := Probe} <- starts(Logs)]),
        [dqsd_otel:end_span(Ctx) || Ctx <- Ctxs],
        ok = dqsd_otel:flush(),
        [{<<"/v1/traces">>, Traces}] = received(1),
        ?assertEqual(4, length(spans(Traces))),
        ?assertMatch(#{exported_events := 1, dropped_events := 0, elided_events := 0,
                       exported_spans := 4},
                     dqsd_otel:stats())
    end).

%% A name longer than 256 bytes as sent names no probe either: the
%% collector refuses such a probe name (its components refuse one longer in
%% their configurations), as sdk/deltaqstart's maxProbeLength says, and it
%% gets no start event, in either form, its span exported all the same. The
%% length is of the name as sent: an atom of 129 two-byte characters is 258
%% bytes, each of 86 bytes that are not UTF-8 becomes U+FFFD's three. Names
%% are taken by their text, flattened: [<<>>] is as empty as <<>>.
probe_name_limits_test_() ->
    [{atom_to_list(Form), fun() -> probe_name_limits(Form) end} || Form <- [batch, per_span]].

probe_name_limits(Form) ->
    Longest = binary:copy(<<"p">>, 256),
    Delta = <<16#394/utf8>>,
    Names = [Longest, <<Longest/binary, "q">>,
             list_to_atom(lists:duplicate(128, 16#394)), list_to_atom(lists:duplicate(129, 16#394)),
             binary:copy(<<16#ff>>, 85), binary:copy(<<16#ff>>, 86),
             [<<>>], [<<"a">>, "b"]],
    with_server(fun ok_200/2, #{start_events => Form}, fun(_) ->
        Ctxs = [dqsd_otel:start_span(Name) || Name <- Names],
        ok = dqsd_otel:flush(),
        [{<<"/v1/logs">>, Logs}] = received(1),
        ?assertEqual([Longest, binary:copy(Delta, 128),
                      binary:copy(<<16#fffd/utf8>>, 85), <<"ab">>],
                     [Probe || #{probe := Probe} <- starts(Logs)]),
        [dqsd_otel:end_span(Ctx) || Ctx <- Ctxs],
        ok = dqsd_otel:flush(),
        [{<<"/v1/traces">>, Traces}] = received(1),
        ?assertEqual(length(Names), length(spans(Traces))),
        ?assertMatch(#{exported_events := 4, dropped_events := 0, elided_events := 0,
                       exported_spans := 8},
                     dqsd_otel:stats())
    end).

disabled_test() ->
    with_server(fun ok_200/2, #{enabled => false}, fun(_) ->
        ?assertNot(dqsd_otel:is_enabled()),
        Off = dqsd_otel:start_span(<<"off">>),
        ?assertEqual(undefined, dqsd_otel:trace_id(Off)),
        ok = dqsd_otel:end_span(Off),
        ?assertEqual(7, dqsd_otel:with_span(<<"off">>, fun() -> 7 end)),
        ?assertEqual(0, stat(queued)),
        ok = dqsd_otel:enable(),
        ?assert(dqsd_otel:is_enabled()),
        On = dqsd_otel:start_span(<<"on">>),
        %% A span started while enabled is still exported after disable().
        ok = dqsd_otel:disable(),
        Off2 = dqsd_otel:start_span(<<"off">>),
        ok = dqsd_otel:flush(),
        [{<<"/v1/logs">>, Logs}] = received(1),
        ?assertEqual([<<"on">>], [Probe || #{probe := Probe} <- starts(Logs)]),
        ok = dqsd_otel:end_span(On),
        ok = dqsd_otel:end_span(Off2),
        ok = dqsd_otel:flush(),
        [{<<"/v1/traces">>, Traces}] = received(1),
        ?assertEqual([<<"on">>], [maps:get(<<"name">>, S) || S <- spans(Traces)]),
        nothing_more_received()
    end).

not_started_test() ->
    ?assertEqual(undefined, whereis(dqsd_otel_sup)),
    Ctx = dqsd_otel:start_span(<<"x">>),
    ?assertEqual(undefined, dqsd_otel:trace_id(Ctx)),
    ?assertEqual(ok, dqsd_otel:end_span(Ctx)),
    ?assertEqual(ok, dqsd_otel:fail_span(Ctx, oops)),
    ?assertEqual(3, dqsd_otel:with_span(<<"x">>, fun() -> 3 end)),
    ?assertEqual({error, not_started}, dqsd_otel:flush()),
    ?assertEqual({error, not_started}, dqsd_otel:enable()),
    ?assertEqual(#{}, dqsd_otel:stats()).

%%--------------------------------------------------------------------
%% Batching

batching_test() ->
    with_server(fun ok_200/2, #{batch_size => 10}, fun(_) ->
        %% All started and sent, then all ended: no round holds a span and
        %% its start, so every start is sent.
        Ctxs = [dqsd_otel:start_span(integer_to_binary(I)) || I <- lists:seq(1, 25)],
        ok = dqsd_otel:flush(),
        [dqsd_otel:end_span(Ctx) || Ctx <- Ctxs],
        ok = dqsd_otel:flush(),
        wait_until(fun() -> stat(exported_spans) =:= 25 end),
        Requests = collect_all(),
        %% Items of one batch: at most batch_size per pair of requests.
        [?assert(length(records(Path, Body)) =< 10) || {Path, Body} <- Requests],
        Names = fun(P) -> lists:append([[name(Path, R) || R <- records(Path, Body)]
                                        || {Path, Body} <- Requests, Path =:= P])
                end,
        Expected = [integer_to_binary(I) || I <- lists:seq(1, 25)],
        ?assertEqual(Expected, Names(<<"/v1/logs">>)),
        ?assertEqual(Expected, Names(<<"/v1/traces">>)),
        %% No span is sent before its start event.
        Order = lists:append([[{Path, name(Path, R)} || R <- records(Path, Body)]
                              || {Path, Body} <- Requests]),
        [?assert(index({<<"/v1/logs">>, N}, Order) < index({<<"/v1/traces">>, N}, Order))
         || N <- Expected]
    end).

collect_all() ->
    receive
        {dqsd_http, _, Path, _, Body} -> [{Path, Body} | collect_all()]
    after 100 ->
        []
    end.

records(<<"/v1/logs">>, Body) -> starts(Body);
records(<<"/v1/traces">>, Body) -> spans(Body).

name(<<"/v1/logs">>, #{probe := Probe}) ->
    Probe;
name(<<"/v1/traces">>, Span) ->
    maps:get(<<"name">>, Span).

index(X, List) -> index(X, List, 1).
index(X, [X | _], I) -> I;
index(X, [_ | T], I) -> index(X, T, I + 1).

%% A full batch wakes the exporter without waiting for its interval.
full_batch_test() ->
    with_server(fun ok_200/2, #{batch_size => 4}, fun(_) ->
        [dqsd_otel:end_span(dqsd_otel:start_span(<<"s">>)) || _ <- [1, 2]],
        [{<<"/v1/traces">>, Traces}] = received(1),
        ?assertEqual(2, length(spans(Traces)))
    end).

interval_test() ->
    with_server(fun ok_200/2, #{batch_interval_ms => 20}, fun(_) ->
        _Open = dqsd_otel:start_span(<<"open">>),
        dqsd_otel:end_span(dqsd_otel:start_span(<<"s">>)),
        [{<<"/v1/logs">>, _}, {<<"/v1/traces">>, _}] = received(2)
    end).

%%--------------------------------------------------------------------
%% The bounded queue and failed exports

queue_limit_test() ->
    with_app(#{endpoint => refused_endpoint(), queue_limit => 10, batch_size => 1000},
             fun() ->
        %% 8 spans = 16 items: the first 10 fit (5 starts, 5 ends).
        [?assertEqual(ok, dqsd_otel:end_span(dqsd_otel:start_span(<<"s">>)))
         || _ <- lists:seq(1, 8)],
        ?assertMatch(#{queued := 10, dropped_events := 3, dropped_spans := 3},
                     dqsd_otel:stats()),
        %% The collector is down: flush reports what it could not send
        %% (the spans; their starts, in the same round, are not sent).
        ?assertEqual({error, {not_exported, #{spans => 5, events => 0}}},
                     dqsd_otel:flush()),
        ?assertMatch(#{queued := 0, failed_spans := 5, failed_events := 0,
                       elided_events := 5, exported_spans := 0},
                     dqsd_otel:stats()),
        %% There is room again.
        dqsd_otel:end_span(dqsd_otel:start_span(<<"s">>)),
        ?assertEqual(2, stat(queued))
    end).

%% The queue is bounded in bytes as well as in items: with the collector
%% down, 4,096 spans of a 100 KB attribute held 531 MB. With queue_max_bytes
%% at 1 MiB, ten of them fit at most (each about 100 KB), the others and
%% the start events beyond the bound are dropped and counted, and the
%% queue's bytes stay within it.
queue_bytes_test() ->
    with_app(#{endpoint => refused_endpoint(), queue_max_bytes => 1 bsl 20,
               batch_size => 100000, queue_limit => 100000},
             fun() ->
        Big = binary:copy(<<"x">>, 100000),
        [dqsd_otel:end_span(dqsd_otel:start_span(<<"s">>, #{<<"payload">> => Big}))
         || _ <- lists:seq(1, 4096)],
        #{queued := Queued, queued_bytes := Bytes, dropped_spans := DroppedSpans,
          dropped_events := DroppedEvents} = dqsd_otel:stats(),
        ?assert(Bytes =< 1 bsl 20),
        ?assert(Bytes > 1 bsl 20 - 100200),
        %% The collector is down: flush gives back what it holds.
        %% (the starts of the spans queued are not sent: they are elided).
        {error, {not_exported, #{spans := Spans, events := Events}}} = dqsd_otel:flush(),
        Elided = stat(elided_events),
        ?assertEqual(Queued, Spans + Events + Elided),
        ?assert(Spans >= 9 andalso Spans =< 10),
        ?assertEqual(Spans, Elided),
        ?assertEqual(4096, Spans + DroppedSpans),
        ?assertEqual(4096, Events + Elided + DroppedEvents),
        ?assertMatch(#{queued := 0, queued_bytes := 0}, dqsd_otel:stats())
    end).

%% One span larger alone than max_request_bytes (a 25 MiB attribute) failed
%% the whole request it was in: 144 honest spans were lost with it. It is
%% dropped and counted alone; the others arrive, in more than one request
%% when they do not fit in one. About 4 s of JSON on a busy machine: more
%% than EUnit's default 5 s for a test allows.
oversized_item_test_() ->
    {timeout, 60, fun oversized_item/0}.

oversized_item() ->
    with_server(fun ok_200/2, #{batch_size => 1000, max_request_bytes => 4 bsl 20,
                               queue_max_bytes => 64 bsl 20},
                fun(_) ->
        Huge = binary:copy(<<"y">>, 25 bsl 20),
        Big = binary:copy(<<"z">>, 100000),
        Honest = [dqsd_otel:start_span(integer_to_binary(I), #{<<"payload">> => Big})
                  || I <- lists:seq(1, 144)],
        Bad = dqsd_otel:start_span(<<"bad">>, #{<<"payload">> => Huge}),
        {H1, H2} = lists:split(72, Honest),
        [dqsd_otel:end_span(S) || S <- H1],
        dqsd_otel:end_span(Bad),
        [dqsd_otel:end_span(S) || S <- H2],
        ok = dqsd_otel:flush(60000),
        Requests = [{P, B} || {P, B} <- collect_all(), P =:= <<"/v1/traces">>],
        ?assert(length(Requests) >= 4),
        [?assert(byte_size(B) =< 4 bsl 20) || {_, B} <- Requests],
        Names = lists:sort([maps:get(<<"name">>, S) || {_, B} <- Requests, S <- spans(B)]),
        ?assertEqual(lists:sort([integer_to_binary(I) || I <- lists:seq(1, 144)]), Names),
        ?assertMatch(#{exported_spans := 144, oversized_spans := 1, failed_spans := 0,
                       exported_events := 0, elided_events := 145, oversized_events := 0},
                     dqsd_otel:stats())
    end).

retry_test() ->
    Responder = fun(N, _) when N =< 2 -> 503; (_, _) -> 200 end,
    with_server(Responder, #{batch_interval_ms => 20}, fun(_) ->
        %% A start event (of a span still open) and a span, in one batch.
        _Open = dqsd_otel:start_span(<<"open">>),
        dqsd_otel:end_span(dqsd_otel:start_span(<<"s">>)),
        wait_until(fun() -> stat(exported_spans) =:= 1 end),
        Paths = [P || {P, _} <- received(4)],
        ?assertEqual([<<"/v1/logs">>, <<"/v1/logs">>, <<"/v1/logs">>, <<"/v1/traces">>],
                     Paths),
        ?assertMatch(#{exported_events := 1, export_errors := 2, failed_events := 0,
                       failed_spans := 0},
                     dqsd_otel:stats())
    end).

%% After max_retries retries the request's items count as failed.
give_up_test() ->
    with_server(fun(_, _) -> 503 end, #{batch_interval_ms => 20, max_retries => 2},
                fun(_) ->
        _Open = dqsd_otel:start_span(<<"open">>),
        dqsd_otel:end_span(dqsd_otel:start_span(<<"s">>)),
        wait_until(fun() -> stat(failed_spans) =:= 1 end),
        Paths = [P || {P, _} <- received(6)],
        ?assertEqual(lists:duplicate(3, <<"/v1/logs">>) ++ lists:duplicate(3, <<"/v1/traces">>),
                     Paths),
        nothing_more_received(),
        ?assertMatch(#{failed_events := 1, export_errors := 6, exported_spans := 0},
                     dqsd_otel:stats())
    end).

%% A request that keeps failing is retried until its time budget, beyond
%% 1 + 5 attempts (the old default of max_retries), and no retry
%% begins later than the budget after its first failure; then its items
%% count as failed and nothing more is sent. Its span and start event fill
%% a batch of two, which wakes the exporter: one request, of the span.
give_up_after_retry_time_test() ->
    Self = self(),
    Responder = fun(N, _) -> Self ! {attempt, N, erlang:monotonic_time(millisecond)}, 503 end,
    %% Long enough for more than 1 + 5 attempts at the tests' backoff (5
    %% to 20 ms) even when a busy machine stalls some by tens of ms.
    Budget = 600,
    with_server(Responder, #{batch_size => 2, max_retry_time_ms => Budget}, fun(_) ->
        dqsd_otel:end_span(dqsd_otel:start_span(<<"s">>)),
        wait_until(fun() -> stat(failed_spans) =:= 1 end),
        Attempts = attempts(),
        ?assertEqual(lists:duplicate(length(Attempts), <<"/v1/traces">>),
                     [P || {P, _} <- received(length(Attempts))]),
        nothing_more_received(),
        ?assert(length(Attempts) > 6),
        %% Retries are at most 20 ms apart (retry_backoff_max_ms) after
        %% their answers: the last one begins within 20 ms of the budget
        %% or, on a machine so busy that answers take longer, within the
        %% longest gap seen between two attempts (an answer and a
        %% backoff); a loop that gave up early would fall far short of it.
        Span = lists:last(Attempts) - hd(Attempts),
        Gaps = [B - A || {A, B} <- lists:zip(lists:droplast(Attempts), tl(Attempts))],
        ?assert(Span >= Budget - max(40, lists:max(Gaps) + 20)),
        %% No retry begins after the budget: one whose timer, due within
        %% it, fired late on a busy machine may, but then none follows.
        ?assert(length([A || A <- Attempts, A - hd(Attempts) > Budget]) =< 1),
        ?assertMatch(#{failed_spans := 1, failed_events := 0, exported_spans := 0,
                       elided_events := 1},
                     dqsd_otel:stats())
    end).

%% With the default budget a request that fails for longer than 1 + 5
%% attempts (the old default of max_retries, some 40 to 75 ms with the
%% tests' backoff of 5 to 20 ms) is delivered in the end: nothing counts as
%% failed.
delivered_within_retry_time_test() ->
    Self = self(),
    %% Times in ms from Base, so at least 1; First holds the first
    %% request's, 0 until it comes.
    Base = erlang:monotonic_time(millisecond) - 1,
    First = atomics:new(1, [{signed, true}]),
    Responder = fun(N, _) ->
                        Now = erlang:monotonic_time(millisecond) - Base,
                        _ = atomics:compare_exchange(First, 1, 0, Now),
                        Self ! {attempt, N, Now},
                        %% Failed for 200 ms and for more than 1 + 5
                        %% attempts, whatever the machine's speed: a busy
                        %% machine made fewer attempts in the 200 ms.
                        case N =< 7 orelse Now - atomics:get(First, 1) < 200 of
                            true -> 503;
                            false -> 200
                        end
                end,
    with_server(Responder, #{batch_size => 2}, fun(_) ->
        dqsd_otel:end_span(dqsd_otel:start_span(<<"s">>)),
        wait_until(fun() -> stat(exported_spans) + stat(failed_spans) =:= 1 end),
        Attempts = attempts(),
        ?assert(length(Attempts) > 6),
        ?assert(lists:last(Attempts) - hd(Attempts) >= 200),
        ?assertMatch(#{failed_spans := 0, failed_events := 0, exported_spans := 1,
                       queued := 0},
                     dqsd_otel:stats()),
        ?assertEqual(length(Attempts), stat(export_errors) + 1)
    end).

%% The times of the attempts reported so far, in order.
attempts() ->
    receive
        {attempt, _N, At} -> [At | attempts()]
    after 0 ->
        []
    end.

%% Other HTTP errors are not retried.
rejected_test() ->
    with_server(fun(_, _) -> 400 end, #{batch_interval_ms => 20}, fun(_) ->
        _Open = dqsd_otel:start_span(<<"open">>),
        dqsd_otel:end_span(dqsd_otel:start_span(<<"s">>)),
        wait_until(fun() -> stat(failed_spans) =:= 1 end),
        [{<<"/v1/logs">>, _}, {<<"/v1/traces">>, _}] = received(2),
        nothing_more_received(),
        ?assertMatch(#{failed_events := 1, export_errors := 2}, dqsd_otel:stats())
    end).

%% A 503 with a Retry-After below 100 s (the collector's OTLP/HTTP
%% receiver sends one when it is throttled), which httpc retried by itself
%% for as long as the endpoint answered so, without a word to the exporter:
%% export stopped for good, and neither export_timeout_ms nor the retry
%% budget ended the request. Each attempt now ends within its timeout, and
%% the request is given up on after the budget; nothing is sent meanwhile
%% but the exporter's own attempts.
retry_after_503_test() ->
    Responder = fun(_, _) -> {503, [{<<"Retry-After">>, <<"1">>}]} end,
    with_server(Responder, #{batch_interval_ms => 20, export_timeout_ms => 200,
                             max_retry_time_ms => 300}, fun(_) ->
        dqsd_otel:end_span(dqsd_otel:start_span(<<"s">>)),
        wait_until(fun() -> stat(failed_spans) =:= 1 end),
        Attempts = stat(export_requests),
        ?assert(Attempts >= 2),
        ?assertEqual(Attempts, stat(export_errors)),
        ?assertEqual(ok, dqsd_otel:flush()),
        ?assertEqual(Attempts, length(received(Attempts))),
        nothing_more_received()
    end).

%% A 429 whose Retry-After (1 s) is beyond retry_backoff_max_ms (20 ms
%% here, 5 s by default) is waited out (OTLP/HTTP, "Throttling": the
%% client SHOULD honour it). The cap bounded it, and the request went again
%% after 20 ms (a collector asking for 30 s was asked again every 5 s).
%% Meanwhile nothing else is sent, and the queue stays within its limit:
%% what is recorded beyond it is dropped and counted.
retry_after_honoured_test() ->
    Self = self(),
    Responder = fun(N, _Path) ->
                        Self ! {attempt, N, erlang:monotonic_time(millisecond)},
                        case N of
                            1 -> {429, [{<<"Retry-After">>, <<"1">>}]};
                            _ -> 200
                        end
                end,
    try
        with_server(Responder, #{batch_size => 2, queue_limit => 4}, fun(_) ->
            record(<<"s">>),
            First = receive {attempt, 1, T1} -> T1 after 5000 -> error(no_request) end,
            %% Ten more spans and their start events while it waits: four
            %% items fit in the queue.
            [record(<<"t">>) || _ <- lists:seq(1, 10)],
            ?assertMatch(#{queued := 4}, dqsd_otel:stats()),
            ?assertEqual(16, stat(dropped_spans) + stat(dropped_events)),
            Second = receive {attempt, 2, T2} -> T2 after 4000 -> error(no_retry) end,
            ?assert(Second - First >= 1000),
            wait_until(fun() -> stat(exported_spans) >= 1 end),
            ?assertMatch(#{failed_spans := 0, export_errors := 1}, dqsd_otel:stats())
        end)
    after
        %% The attempts of the last flush, as the application stops.
        forget_attempts()
    end.

%% A Retry-After beyond the retry budget (1 s, max_retry_time_ms 300): the
%% request is given up at once, and the next one (the batch's spans, after
%% its start events) is not sent before the server's wait is out either.
%% With the cap, the first was retried 20 ms later, and taken.
retry_after_beyond_budget_test() ->
    Self = self(),
    Responder = fun(N, Path) ->
                        Self ! {attempt, N, Path, erlang:monotonic_time(millisecond)},
                        case N of
                            1 -> {429, [{<<"Retry-After">>, <<"1">>}]};
                            _ -> 200
                        end
                end,
    try
        with_server(Responder, #{batch_interval_ms => 20, max_retry_time_ms => 300}, fun(_) ->
            _Open = dqsd_otel:start_span(<<"open">>),
            record(<<"s">>),
            {First, Logs} = receive {attempt, 1, P1, T1} -> {T1, P1} after 5000 -> error(no_request) end,
            ?assertEqual(<<"/v1/logs">>, Logs),
            {Second, Traces} = receive {attempt, 2, P2, T2} -> {T2, P2} after 4000 -> error(no_request) end,
            ?assertEqual(<<"/v1/traces">>, Traces),
            ?assert(Second - First >= 1000),
            wait_until(fun() -> stat(exported_spans) =:= 1 end),
            ?assertMatch(#{failed_events := 1, exported_events := 0, export_errors := 1},
                         dqsd_otel:stats())
        end)
    after
        %% The attempts of the last flush, as the application stops.
        forget_attempts()
    end.

%% The answer is waited for in a `receive ... after', which takes at most
%% 2^32 - 1 ms: a longer export_timeout_ms must not crash the exporter.
long_export_timeout_test() ->
    Responder = fun(_, _) -> hang end,
    with_server(Responder, #{batch_interval_ms => 20, export_timeout_ms => 1 bsl 33}, fun(_) ->
        Exporter = whereis(dqsd_otel_exporter),
        dqsd_otel:end_span(dqsd_otel:start_span(<<"s">>)),
        Handler = receive {dqsd_http_hang, _, H} -> H after 5000 -> error(no_request) end,
        %% Waiting for the answer, not crashed on the way there.
        wait_until(fun() -> process_info(Exporter, current_function)
                                =:= {current_function, {dqsd_otel_exporter, answer, 3}} end),
        Handler ! release,
        wait_until(fun() -> stat(exported_spans) =:= 1 end),
        ?assertEqual(Exporter, whereis(dqsd_otel_exporter))
    end).

%% An OTLP partial success (OTLP/HTTP, "Partial Success": 200 with
%% partial_success in the response) is not retried, and the items it
%% rejects are not exported: they count as failed, and flush/0 says so.
%% They were counted as exported.
partial_success_spans_test() ->
    Responder = fun(_, <<"/v1/traces">>) ->
                        {200, [], <<"{\"partialSuccess\":{\"rejectedSpans\":\"2\","
                                    "\"errorMessage\":\"2 spans too old\"}}">>};
                   (_, _) -> 200
                end,
    with_server(Responder, #{}, fun(_) ->
        [dqsd_otel:end_span(dqsd_otel:start_span(<<"s">>)) || _ <- lists:seq(1, 5)],
        ?assertEqual({error, {not_exported, #{spans => 2, events => 0}}}, dqsd_otel:flush()),
        [{<<"/v1/traces">>, _}] = received(1),
        nothing_more_received(),
        ?assertMatch(#{exported_spans := 3, failed_spans := 2, export_errors := 0},
                     dqsd_otel:stats())
    end).

%% In the per-span form a rejected log record is one start event; a
%% partial success with a message alone (a warning) rejects nothing, and
%% the proto's field names are read as the JSON ones.
partial_success_events_test_() ->
    Answer = fun(Body) ->
                     fun(_, <<"/v1/logs">>) -> {200, [], Body}; (_, _) -> 200 end
             end,
    Run = fun(Body, Form) ->
                  with_server(Answer(Body), #{start_events => Form}, fun(_) ->
                      _Open = [dqsd_otel:start_span(P) || P <- [<<"a">>, <<"a">>, <<"b">>]],
                      Flushed = dqsd_otel:flush(),
                      [{<<"/v1/logs">>, _}] = received(1),
                      {Flushed, maps:with([exported_events, failed_events], dqsd_otel:stats())}
                  end)
          end,
    [?_assertEqual({{error, {not_exported, #{spans => 0, events => 1}}},
                    #{exported_events => 2, failed_events => 1}},
                   Run(<<"{\"partialSuccess\":{\"rejectedLogRecords\":\"1\"}}">>, per_span)),
     ?_assertEqual({{error, {not_exported, #{spans => 0, events => 2}}},
                    #{exported_events => 1, failed_events => 2}},
                   Run(<<"{\"partial_success\":{\"rejected_log_records\":2}}">>, per_span)),
     %% Both batch records (probes a and b) rejected: their 3 starts.
     ?_assertEqual({{error, {not_exported, #{spans => 0, events => 3}}},
                    #{exported_events => 0, failed_events => 3}},
                   Run(<<"{\"partialSuccess\":{\"rejectedLogRecords\":\"2\"}}">>, batch)),
     ?_assertEqual({ok, #{exported_events => 3, failed_events => 0}},
                   Run(<<"{\"partialSuccess\":{\"errorMessage\":\"slow down\"}}">>, batch)),
     ?_assertEqual({ok, #{exported_events => 3, failed_events => 0}},
                   Run(<<"{\"partialSuccess\":{}}">>, batch))].

%% While the exporter waits on a collector that does not answer, callers
%% go on: their spans are queued. Were the caller's path to wait for the
%% exporter, this test would hang.
caller_never_waits_test() ->
    Responder = fun(1, _) -> hang; (_, _) -> 200 end,
    with_server(Responder, #{batch_size => 2}, fun(_) ->
        dqsd_otel:end_span(dqsd_otel:start_span(<<"first">>)),
        Handler = receive {dqsd_http_hang, 1, H} -> H after 5000 -> error(no_request) end,
        [dqsd_otel:end_span(dqsd_otel:start_span(<<"s">>)) || _ <- lists:seq(1, 100)],
        ?assertEqual(200, stat(queued)),
        Handler ! release,
        wait_until(fun() -> stat(exported_spans) =:= 101 end),
        %% Each batch of two holds a span and its start: no start is sent.
        ?assertMatch(#{exported_events := 0, elided_events := 101, queued := 0,
                       failed_spans := 0},
                     dqsd_otel:stats())
    end).

%% The queue belongs to the supervisor: a restarted exporter finds it intact.
exporter_restart_test() ->
    with_server(fun ok_200/2, #{}, fun(_) ->
        [dqsd_otel:end_span(dqsd_otel:start_span(<<"s">>)) || _ <- [1, 2, 3]],
        Old = whereis(dqsd_otel_exporter),
        exit(Old, kill),
        wait_until(fun() ->
                           New = whereis(dqsd_otel_exporter),
                           New =/= undefined andalso New =/= Old
                   end),
        ok = dqsd_otel:flush(),
        [{<<"/v1/traces">>, Traces}] = received(1),
        ?assertEqual(3, length(spans(Traces)))
    end).

%%--------------------------------------------------------------------
%% Surviving inets and the exporter going away. Before these were handled,
%% stopping inets made httpc:request exit `noproc' in the exporter, its
%% restarts failed on `{error, inets_not_started}', and five restarts in
%% ten seconds stopped the supervisor and the application (and, for a
%% permanent application, the node); six quick kills of the exporter did
%% the same.

%% Runs Fun with the application exporting to a local server every 20 ms,
%% and starts inets again afterwards, whatever Fun did to it, so that a
%% failing test does not leave the next ones without inets.
with_inets_server(Fun) ->
    with_inets_server(#{}, Fun).

with_inets_server(Env, Fun) ->
    with_server(fun ok_200/2, Env#{batch_interval_ms => 20}, fun(_) ->
        try
            Fun()
        after
            application:unset_env(inets, services),
            {ok, _} = application:ensure_all_started(inets)
        end
    end).

record(Name) ->
    ?assertEqual(ok, dqsd_otel:end_span(dqsd_otel:start_span(Name))).

%% Waits (at most 5 s) for a /v1/traces request with a span named Name, and
%% returns that span; other requests are skipped.
await_span(Name) ->
    Deadline = erlang:monotonic_time(millisecond) + 5000,
    await_span(Name, Deadline).

await_span(Name, Deadline) ->
    Left = max(0, Deadline - erlang:monotonic_time(millisecond)),
    receive
        {dqsd_http, _, <<"/v1/traces">>, _, Body} ->
            case [S || #{<<"name">> := N} = S <- spans(Body), N =:= Name] of
                [Span | _] -> Span;
                [] -> await_span(Name, Deadline)
            end;
        {dqsd_http, _, _, _, _} ->
            await_span(Name, Deadline)
    after Left ->
        error({span_never_exported, Name, dqsd_otel:stats()})
    end.

%% Waits for an exporter other than Old to be registered.
new_exporter(Old) ->
    wait_until(fun() ->
                       New = whereis(dqsd_otel_exporter),
                       New =/= undefined andalso New =/= Old
               end),
    whereis(dqsd_otel_exporter).

app_running() ->
    lists:keymember(dqsd_otel, 1, application:which_applications()).

inets_running() ->
    lists:keymember(inets, 1, application:which_applications()).

%% The exporter's httpc profile is stopped once, with a shutdown from the
%% exporter, its parent, which it waits for: the profile's session handlers
%% stop with it, quietly. It was told to shut down and killed at once, and
%% the kill came first: the handler of each kept-alive connection, linked to
%% the profile, died of `killed' and logged an error report ("Generic
%% server ... terminating") and a crash report, where the exporter restarts
%% its profile (after httpc raised) and, unless the application master's
%% kill of the application's processes came first, where the application
%% stops. Here the test process starts and stops the profile as the
%% exporter does.
profile_stops_quietly_test() ->
    {ok, Server} = dqsd_otel_test_http:start(fun ok_200/2),
    Url = dqsd_otel_test_http:endpoint(Server) ++ "/v1/traces",
    ok = logger:add_handler(profile_stop, ?MODULE, #{level => all, config => #{pid => self()}}),
    try
        ok = logger:set_primary_config(level, error),
        Profile = dqsd_otel_exporter:start_profile(Url),
        {ok, {{_, 200, _}, _, _}} = httpc:request(post, {Url, [], "application/json", "{}"}, [], [],
                                                  Profile),
        %% The handler of the kept-alive connection.
        [Handler] = [P || {links, Links} <- [process_info(Profile, links)], P <- Links, is_pid(P),
                          P =/= self()],
        Ref = erlang:monitor(process, Handler),
        _ = dqsd_otel_exporter:stop_profile(Profile),
        ?assertNot(is_process_alive(Profile)),
        Why = receive {'DOWN', Ref, process, Handler, W} -> W after 5000 -> alive end,
        ?assertEqual(shutdown, Why),
        %% Its reports, if any, are logged before it ends.
        ?assertEqual([], [E || #{level := L} = E <- logged(),
                               lists:member(L, [error, critical, alert, emergency])]),
        %% Nothing of the profile is left behind for its exit to reach.
        receive {'EXIT', Profile, _} = M -> error({unexpected, M}) after 0 -> ok end
    after
        ok = logger:set_primary_config(level, critical),
        ok = logger:remove_handler(profile_stop),
        _ = logged(),
        dqsd_otel_test_http:stop(Server),
        forget_requests()
    end.

forget_attempts() ->
    receive {attempt, _, _} -> forget_attempts(); {attempt, _, _, _} -> forget_attempts()
    after 0 -> ok
    end.

%% A logger handler (logger:add_handler/3) sending every event to the test.
log(Event, #{config := #{pid := Pid}}) ->
    Pid ! {logged, Event}.

logged() ->
    receive {logged, Event} -> [Event | logged()] after 0 -> [] end.

%% inets stopped under a running exporter: export goes on, without an
%% error or a restart, since its httpc profile is a stand-alone one of its
%% own; nor does it start inets again behind the back of whoever stopped
%% it.
inets_stopped_test() ->
    with_inets_server(fun() ->
        record(<<"before">>),
        await_span(<<"before">>),
        Exporter = whereis(dqsd_otel_exporter),
        Errors = stat(export_errors),
        ok = application:stop(inets),
        record(<<"during">>),
        await_span(<<"during">>),
        ?assertEqual(Errors, stat(export_errors)),
        ?assertEqual(Exporter, whereis(dqsd_otel_exporter)),
        ?assert(app_running()),
        ?assertNot(inets_running()),
        ?assertEqual(0, stat(exporter_restarts))
    end).

%% inets stopped, then the exporter killed ten times in quick succession,
%% each time as soon as the watchdog has started the next one; callers go
%% on recording throughout. Export resumes, the supervisor is the same, the
%% application still runs.
exporter_killed_repeatedly_test() ->
    with_inets_server(fun() ->
        record(<<"before">>),
        await_span(<<"before">>),
        Sup = whereis(dqsd_otel_sup),
        ok = application:stop(inets),
        record(<<"inets_stopped">>),
        %% The caller's path needs no exporter.
        kill_exporter(10, fun() -> record(<<"exporter_killed">>) end),
        ?assertEqual(Sup, whereis(dqsd_otel_sup)),
        ?assert(app_running()),
        {ok, _} = application:ensure_all_started(inets),
        record(<<"after">>),
        await_span(<<"after">>),
        %% Nine restarts at least are the watchdog's (the first kill may hit
        %% the exporter the supervisor started).
        ?assert(stat(exporter_restarts) >= 9)
    end).

%% The same ten kills with inets running: the watchdog's restarts do not
%% count towards the supervisor's restart intensity (5 in 10 s).
exporter_kills_leave_supervisor_test() ->
    with_server(fun ok_200/2, #{batch_interval_ms => 20}, fun(_) ->
        Sup = whereis(dqsd_otel_sup),
        kill_exporter(10, fun() -> ok end),
        ?assertEqual(Sup, whereis(dqsd_otel_sup)),
        record(<<"after">>),
        await_span(<<"after">>)
    end).

%% inets stopped and ten kills with the application started `permanent', as
%% a release starts it, on a node of its own: had the supervisor stopped,
%% the node would have stopped with it.
permanent_node_survives_test_() ->
    {timeout, 60, fun permanent_node_survives/0}.

permanent_node_survives() ->
    {ok, Server} = dqsd_otel_test_http:start(fun ok_200/2),
    Paths = lists:usort([filename:absname(filename:dirname(code:which(M)))
                         || M <- [dqsd_otel, ?MODULE, dqsd_otel_test_http]]),
    %% No crash dump should the node stop.
    {ok, Peer, _Node} = peer:start(#{connection => standard_io,
                                     env => [{"ERL_CRASH_DUMP_SECONDS", "0"}],
                                     args => ["-kernel", "logger_level", "critical"
                                              | lists:append([["-pa", P] || P <- Paths])]}),
    Call = fun(F, A) -> peer:call(Peer, ?MODULE, F, A, 15000) end,
    try
        ok = Call(peer_start, [dqsd_otel_test_http:endpoint(Server)]),
        ok = peer:call(Peer, application, stop, [inets]),
        ok = Call(record, [<<"inets_stopped">>]),
        ok = Call(kill_exporter, [10, fun() -> ok end]),
        ?assertEqual(true, Call(app_running, [])),
        {ok, _} = peer:call(Peer, application, ensure_all_started, [inets]),
        ok = Call(record, [<<"after">>]),
        await_span(<<"after">>)
    after
        catch peer:stop(Peer),
        dqsd_otel_test_http:stop(Server),
        forget_requests()
    end.

%% A span context is a plain value, and a process on another node gets it
%% as a local one does: a span started on one node and ended on another
%% (either way round) carries the times at which it started and ended. Each
%% node's monotonic time counts from the node's own start, and a start
%% stamped there was taken for one of the node that ended the span: off by
%% the difference of the nodes' uptimes, here at least 1 s. The bounds
%% allow 100 ms for the two runtime systems' views of the system clock.
span_ended_on_another_node_test_() ->
    {timeout, 60, fun span_ended_on_another_node/0}.

span_ended_on_another_node() ->
    with_server(fun ok_200/2, #{}, fun(Server) ->
        Paths = lists:usort([filename:absname(filename:dirname(code:which(M)))
                             || M <- [dqsd_otel, ?MODULE, dqsd_otel_test_http]]),
        Uptime = erlang:convert_time_unit(erlang:monotonic_time() - erlang:system_info(start_time),
                                          native, millisecond),
        timer:sleep(max(0, 1000 - Uptime)),
        Slack = 100000000,
        {ok, Peer, _Node} = peer:start(#{connection => standard_io,
                                         args => ["-kernel", "logger_level", "critical"
                                                  | lists:append([["-pa", P] || P <- Paths])]}),
        try
            ok = peer:call(Peer, ?MODULE, peer_start, [dqsd_otel_test_http:endpoint(Server)]),
            Check = fun(Span, Started, Ended) ->
                            Start = binary_to_integer(maps:get(<<"startTimeUnixNano">>, Span)),
                            End = binary_to_integer(maps:get(<<"endTimeUnixNano">>, Span)),
                            ?assert(Start >= Started - Slack),
                            ?assert(End >= Start),
                            ?assert(End =< Ended + Slack)
                    end,
            %% Started there, ended here.
            T1 = erlang:system_time(nanosecond),
            There = peer:call(Peer, dqsd_otel, start_span, [<<"started_there">>]),
            ok = dqsd_otel:end_span(There),
            T2 = erlang:system_time(nanosecond),
            ok = dqsd_otel:flush(),
            Check(await_span(<<"started_there">>), T1, T2),
            %% Started here, ended there.
            T3 = erlang:system_time(nanosecond),
            Here = dqsd_otel:start_span(<<"started_here">>),
            ok = peer:call(Peer, dqsd_otel, end_span, [Here]),
            T4 = erlang:system_time(nanosecond),
            ok = peer:call(Peer, dqsd_otel, flush, []),
            Check(await_span(<<"started_here">>), T3, T4)
        after
            catch peer:stop(Peer)
        end
    end).

%% On the peer node: dqsd_otel started permanent, exporting to Endpoint.
peer_start(Endpoint) ->
    Env = #{endpoint => Endpoint, batch_interval_ms => 20, retry_backoff_ms => 5,
            retry_backoff_max_ms => 20},
    maps:foreach(fun(K, V) -> application:set_env(dqsd_otel, K, V) end, Env),
    {ok, _} = application:ensure_all_started(dqsd_otel, permanent),
    ok.

%% Kills the exporter N times, each as soon as the watchdog has started the
%% next one, and runs After after each kill.
kill_exporter(N, After) ->
    lists:foldl(fun(_, Old) ->
                        New = new_exporter(Old),
                        exit(New, kill),
                        After(),
                        New
                end, undefined, lists:seq(1, N)),
    ok.

%% An exporter (re)started while inets cannot be started exports without
%% it (its httpc profile is a stand-alone one), and does not try to start
%% it.
inets_cannot_start_test() ->
    with_inets_server(fun() ->
        ok = application:stop(inets),
        %% inets's supervisor fails in init with this setting.
        ok = application:set_env(inets, services, not_a_list),
        Old = whereis(dqsd_otel_exporter),
        exit(Old, kill),
        New = new_exporter(Old),
        Errors = stat(export_errors),
        record(<<"after">>),
        await_span(<<"after">>),
        ?assertEqual(Errors, stat(export_errors)),
        ?assertNot(inets_running()),
        ?assertEqual(New, whereis(dqsd_otel_exporter))
    end).

%% With no exporter at all (its watchdog stopped too), callers queue up to
%% the queue limit, then drop and count; a watchdog started again finds no
%% exporter, starts one, and what was queued is exported.
exporter_down_queue_bound_test() ->
    with_server(fun ok_200/2, #{queue_limit => 10, batch_size => 1000}, fun(_) ->
        ok = supervisor:terminate_child(dqsd_otel_sup, dqsd_otel_watchdog),
        Old = whereis(dqsd_otel_exporter),
        exit(Old, kill),
        wait_until(fun() -> whereis(dqsd_otel_exporter) =:= undefined end),
        %% 8 spans = 16 items: the first 10 fit (5 starts, 5 ends).
        [record(<<"s">>) || _ <- lists:seq(1, 8)],
        ?assertMatch(#{queued := 10, dropped_events := 3, dropped_spans := 3},
                     dqsd_otel:stats()),
        ?assertEqual({error, not_started}, dqsd_otel:flush()),
        {ok, _} = supervisor:restart_child(dqsd_otel_sup, dqsd_otel_watchdog),
        new_exporter(Old),
        ?assertEqual(ok, dqsd_otel:flush()),
        ?assertMatch(#{queued := 0, exported_spans := 5, elided_events := 5,
                       exporter_restarts := 1},
                     dqsd_otel:stats())
    end).

%% The last flush, when the application stops, ends within one export
%% timeout whatever the collector does, so that the supervisor need not
%% kill the exporter (5 s) and report it. Here the collector never answers
%% and each request would wait out its own timeout: the request waiting to
%% be retried and the 20 batches queued behind it would take 21 of them,
%% beyond the supervisor's 5 s.
stop_within_bound_test_() ->
    {timeout, 30, fun stop_within_bound/0}.

stop_within_bound() ->
    with_server(fun(_, _) -> hang end,
                #{batch_size => 1, export_timeout_ms => 300, retry_backoff_ms => 60000,
                  retry_backoff_max_ms => 60000, max_retry_time_ms => infinity},
                fun(_) ->
        dqsd_otel:end_span(dqsd_otel:start_span(<<"first">>)),
        receive {dqsd_http_hang, 1, _} -> ok after 5000 -> error(no_request) end,
        [dqsd_otel:end_span(dqsd_otel:start_span(<<"s">>)) || _ <- lists:seq(1, 20)],
        %% The first request timed out: its retry waits a minute.
        wait_until(fun() -> stat(export_errors) =:= 1 end),
        Before = erlang:monotonic_time(millisecond),
        ok = application:stop(dqsd_otel),
        ?assert(erlang:monotonic_time(millisecond) - Before < 1500)
    end).

%%--------------------------------------------------------------------
%% Configuration

config_test() ->
    with_server(fun ok_200/2,
                #{compression => gzip, headers => [{"x-tenant", <<"t1">>}],
                  service_name => <<"mm1k">>,
                  resource_attributes => #{<<"host.name">> => <<"h1">>}},
                fun(_) ->
        _Open = dqsd_otel:start_span(<<"s">>),
        ok = dqsd_otel:flush(),
        {Headers, Body} = receive {dqsd_http, _, <<"/v1/logs">>, H, B} -> {H, B} end,
        ?assertEqual(<<"gzip">>, proplists:get_value(<<"content-encoding">>, Headers)),
        ?assertEqual(<<"application/json">>, proplists:get_value(<<"content-type">>, Headers)),
        ?assertEqual(<<"t1">>, proplists:get_value(<<"x-tenant">>, Headers)),
        #{<<"resourceLogs">> := [#{<<"resource">> := Resource}]} = decode(Body),
        ?assertMatch(#{<<"service.name">> := #{<<"stringValue">> := <<"mm1k">>},
                       <<"host.name">> := #{<<"stringValue">> := <<"h1">>}},
                     attrs(Resource))
    end).

%% An endpoint at an IPv6 address is reached: httpc connects over IPv4
%% unless told otherwise, and failed every request to one with nxdomain.
%% (Where this host has no IPv6 loopback there is nothing to test.)
ipv6_endpoint_test() ->
    case dqsd_otel_test_http:start(fun ok_200/2, self(), {0, 0, 0, 0, 0, 0, 0, 1}) of
        {ok, Server} ->
            try
                with_app(#{endpoint => dqsd_otel_test_http:endpoint(Server)}, fun() ->
                    dqsd_otel:end_span(dqsd_otel:start_span(<<"over_ipv6">>)),
                    ?assertEqual(ok, dqsd_otel:flush(3000)),
                    ?assertMatch(#{<<"name">> := <<"over_ipv6">>}, await_span(<<"over_ipv6">>))
                end)
            after
                dqsd_otel_test_http:stop(Server),
                forget_requests()
            end;
        {error, _} ->
            ok
    end.

%% Header values are sent as the UTF-8 bytes of their text: given as
%% characters, one above 255 crashed httpc's connection process on every
%% request, and nothing was exported. (The timeout leaves room for the
%% stop of an exporter stuck so, should that come back.)
config_unicode_header_test_() ->
    {timeout, 30, fun config_unicode_header/0}.

config_unicode_header() ->
    with_server(fun ok_200/2,
                #{headers => [{"x-tenant", <<"Δ-1"/utf8>>}, {<<"x-team">>, "équipe"}]},
                fun(_) ->
        dqsd_otel:end_span(dqsd_otel:start_span(<<"s">>)),
        ?assertEqual(ok, dqsd_otel:flush(3000)),
        [{<<"/v1/traces">>, Headers}] =
            [{P, H} || _ <- [1], {dqsd_http, _, P, H, _} <- [receive M -> M end]],
        ?assertEqual(<<"Δ-1"/utf8>>, proplists:get_value(<<"x-tenant">>, Headers)),
        ?assertEqual(<<"équipe"/utf8>>, proplists:get_value(<<"x-team">>, Headers))
    end).

config_defaults_test() ->
    {ok, C} = dqsd_otel_config:load(fun(_) -> undefined end),
    ?assertMatch(#{enabled := true,
                   traces_url := "http://localhost:4318/v1/traces",
                   logs_url := "http://localhost:4318/v1/logs",
                   service_name := <<"unknown_service:erlang">>,
                   batch_size := 512, batch_interval_ms := 500, queue_limit := 8192,
                   queue_max_bytes := 33554432, max_request_bytes := 4194304,
                   compression := none, start_events := batch,
                   max_retries := infinity, max_retry_time_ms := 30000},
                 C).

config_os_env_test() ->
    os:putenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector.example:4318/"),
    os:putenv("OTEL_SERVICE_NAME", "from_env"),
    os:putenv("OTEL_RESOURCE_ATTRIBUTES", "a=b, c = d%20e ,junk"),
    try
        {ok, C} = dqsd_otel_config:load(fun(_) -> undefined end),
        ?assertEqual("https://collector.example:4318/v1/traces", maps:get(traces_url, C)),
        ?assertEqual(<<"from_env">>, maps:get(service_name, C)),
        ?assertEqual([{<<"a">>, <<"b">>}, {<<"c">>, <<"d e">>}],
                     maps:get(resource_attributes, C)),
        %% The application environment wins.
        {ok, C2} = dqsd_otel_config:load(fun(endpoint) -> {ok, <<"http://h:1">>};
                                            (_) -> undefined end),
        ?assertEqual("http://h:1/v1/logs", maps:get(logs_url, C2))
    after
        [os:unsetenv(V) || V <- ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_SERVICE_NAME",
                                 "OTEL_RESOURCE_ATTRIBUTES"]]
    end.

%% Without service_name or OTEL_SERVICE_NAME, the service is the resource
%% attributes' service.name (OpenTelemetry SDK specification, "General SDK
%% Configuration": OTEL_SERVICE_NAME wins over a service.name in
%% OTEL_RESOURCE_ATTRIBUTES); it was unknown_service:erlang.
config_service_name_from_resource_test() ->
    Load = fun(Env) ->
                   {ok, C} = dqsd_otel_config:load(fun(K) ->
                                                           case Env of
                                                               #{K := V} -> {ok, V};
                                                               #{} -> undefined
                                                           end
                                                   end),
                   maps:get(service_name, C)
           end,
    os:putenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=checkout,deployment.environment=prod"),
    try
        ?assertEqual(<<"checkout">>, Load(#{})),
        os:putenv("OTEL_SERVICE_NAME", "from_env"),
        ?assertEqual(<<"from_env">>, Load(#{})),
        ?assertEqual(<<"mine">>, Load(#{service_name => <<"mine">>}))
    after
        [os:unsetenv(V) || V <- ["OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"]]
    end,
    ?assertEqual(<<"billing">>, Load(#{resource_attributes => #{<<"service.name">> => <<"billing">>}})),
    ?assertEqual(<<"billing">>, Load(#{resource_attributes => [{'service.name', "billing"}]})),
    ?assertEqual(<<"unknown_service:erlang">>, Load(#{resource_attributes => #{<<"service.name">> => <<>>}})),
    ?assertEqual(<<"unknown_service:erlang">>, Load(#{})).

config_errors_test_() ->
    Load = fun(Key, Value) ->
                   dqsd_otel_config:load(fun(K) when K =:= Key -> {ok, Value};
                                            (_) -> undefined end)
           end,
    [?_assertMatch({error, {bad_config, Key, Value, _}}, Load(Key, Value))
     || {Key, Value} <- [{batch_size, 0}, {batch_size, "10"}, {queue_limit, -1},
                         {queue_max_bytes, 0}, {max_request_bytes, 1.0e6},
                         {batch_interval_ms, 1.5}, {enabled, yes},
                         {endpoint, "localhost:4318"}, {endpoint, "ftp://h/"},
                         {endpoint, 4318}, {compression, zstd}, {ssl_options, verify},
                         %% httpc waited for ever on an element not a pair.
                         {ssl_options, [verify_peer]}, {ssl_options, [{verify, verify_peer}, x]},
                         %% The signal's path would go into the query.
                         {endpoint, "http://h:4318/?api_key=k"}, {endpoint, "http://h:4318/#x"},
                         {endpoint, "http://h:99999"}, {endpoint, "http://h:0"},
                         {max_retries, -1}, {max_retries, 2.0}, {max_retries, forever},
                         {max_retry_time_ms, -1}, {max_retry_time_ms, 1.5e3},
                         {max_retry_time_ms, "30000"}, {max_retry_time_ms, forever},
                         {start_events, per_record},
                         {service_name, <<>>}, {service_name, 3},
                         {headers, [{"x", 1}]}, {headers, x},
                         %% RFC 9110: a name is a token, a value holds no
                         %% control character (a CR LF injects a header).
                         {headers, [{"x tenant", "t1"}]}, {headers, [{"x:y", "t1"}]},
                         {headers, [{"x-tenant", "t1\r\nx-injected: 1"}]},
                         {headers, [{"x-tenant", <<"t", 0>>}]},
                         {resource_attributes, [a]}]].

%% Either retry limit may be lifted, and the time budget may be 0 (no
%% retry).
config_retry_limits_test_() ->
    Load = fun(Key, Value) ->
                   dqsd_otel_config:load(fun(K) when K =:= Key -> {ok, Value};
                                            (_) -> undefined end)
           end,
    [?_assertMatch({ok, #{Key := Value}}, Load(Key, Value))
     || {Key, Value} <- [{max_retries, infinity}, {max_retries, 0}, {max_retries, 5},
                         {max_retry_time_ms, infinity}, {max_retry_time_ms, 0},
                         {max_retry_time_ms, 1000}]].

bad_config_fails_start_test() ->
    logger:set_primary_config(level, critical),  % the failed start is reported
    unset_env(),
    application:set_env(dqsd_otel, batch_size, 0),
    try
        ?assertMatch({error, {dqsd_otel, {{bad_config, batch_size, 0, _}, _}}},
                     application:ensure_all_started(dqsd_otel))
    after
        unset_env()
    end.

%% A misspelt key stops the start as a bad value does, rather than leave
%% its setting at the default unsaid.
unknown_config_key_fails_start_test() ->
    logger:set_primary_config(level, critical),  % the failed start is reported
    unset_env(),
    application:set_env(dqsd_otel, batch_interval, 50),
    try
        ?assertMatch({error, {dqsd_otel, {{bad_config, batch_interval, 50, "unknown key" ++ _}, _}}},
                     application:ensure_all_started(dqsd_otel)),
        ?assertNot(app_running())
    after
        application:stop(dqsd_otel),
        application:unset_env(dqsd_otel, batch_interval),
        unset_env()
    end.

%%--------------------------------------------------------------------
%% No atoms from data

no_atoms_from_data_test() ->
    with_server(fun ok_200/2, #{}, fun(_) ->
        Round = fun() ->
                        [begin
                             Name = base64:encode(crypto_free_random()),
                             Key = binary_to_list(base64:encode(crypto_free_random())),
                             Ctx = dqsd_otel:start_span(Name, [{Key, Name}]),
                             dqsd_otel:fail_span(Ctx, Name)
                         end || _ <- lists:seq(1, 20)],
                        ok = dqsd_otel:flush(),
                        received(1)
                end,
        Round(),  % loads every module and code path once
        Before = erlang:system_info(atom_count),
        Round(),
        ?assertEqual(Before, erlang:system_info(atom_count))
    end).

crypto_free_random() ->
    rand:bytes(12).
