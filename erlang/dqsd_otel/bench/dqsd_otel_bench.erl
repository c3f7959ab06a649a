%% Copyright The deltaq-otel Authors
%% SPDX-License-Identifier: Apache-2.0

%% @doc Overhead of dqsd_otel on the instrumented process, measured as in the
%% thesis (section 7.2): 25 000 consecutive calls each of start_span ->
%% end_span, with_span(fun() -> ok end) and start_span -> fail_span, timing
%% every call and reporting the median and the 99th percentile in µs.
%%
%% The library runs as in production, with its default batch size and
%% interval, exporting to a local HTTP server that answers 200, so the
%% exporter's encoding and posting compete for the CPU as they would. The
%% queue limit is raised to hold a whole run: a tight loop of calls outruns
%% any exporter, and a dropped item costs less than a queued one, which
%% would flatter the figures.
-module(dqsd_otel_bench).

-export([main/0]).

-define(CALLS, 25000).
-define(WARMUP, 5000).

main() ->
    logger:set_primary_config(level, warning),
    {ok, Server} = dqsd_otel_test_http:start(fun(_, _) -> 200 end, none),
    ok = application:set_env(dqsd_otel, queue_limit, 4 * ?CALLS),
    ok = application:set_env(dqsd_otel, endpoint, dqsd_otel_test_http:endpoint(Server)),
    {ok, _} = application:ensure_all_started(dqsd_otel),
    Name = <<"worker_1">>,
    %% The example of the W3C Trace Context Recommendation, section
    %% "traceparent Header".
    Headers = [{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
               {"tracestate", "congo=t61rcWkgMzE"}],
    Remote = dqsd_otel:extract(Headers),
    Cases = [{"timer only (measurement floor)", fun() -> ok end},
             {"start_span -> end_span",
              fun() -> dqsd_otel:end_span(dqsd_otel:start_span(Name)) end},
             {"with_span(fun() -> ok end)",
              fun() -> dqsd_otel:with_span(Name, fun() -> ok end) end},
             {"start_span -> fail_span",
              fun() -> dqsd_otel:fail_span(dqsd_otel:start_span(Name)) end},
             {"start_span/2 (2 attributes) -> end_span",
              fun() ->
                      dqsd_otel:end_span(dqsd_otel:start_span(Name, #{<<"k">> => 1,
                                                                      <<"q">> => <<"v">>}))
              end},
             {"extract/1 (traceparent, tracestate)", fun() -> dqsd_otel:extract(Headers) end},
             {"inject/2 into []", fun() -> dqsd_otel:inject(Remote, []) end},
             {"start_span/3 under a remote parent -> end_span",
              fun() -> dqsd_otel:end_span(dqsd_otel:start_span(Name, #{}, Remote)) end}],
    io:format("dqsd_otel overhead per call, ~b calls each (OTP ~s, ~b schedulers)~n",
              [?CALLS, erlang:system_info(otp_release),
               erlang:system_info(schedulers_online)]),
    io:format("~-42s ~10s ~10s ~10s ~8s~n", ["case", "median us", "p99 us", "mean us", "dropped"]),
    lists:foreach(fun({Label, F}) -> run(Label, F) end, Cases),
    ok = dqsd_otel:disable(),
    run("start_span -> end_span, switched off", fun() ->
                dqsd_otel:end_span(dqsd_otel:start_span(Name))
        end),
    ok = dqsd_otel:enable(),
    encode_cost(),
    throughput(),
    ok = application:stop(dqsd_otel),
    dqsd_otel_test_http:stop(Server),
    ok.

%% The exporter's side: draining, encoding and posting 20 000 spans and their
%% start events (queued while the exporter was suspended) in batches of 512.
throughput() ->
    Spans = 20000,
    ok = sys:suspend(dqsd_otel_exporter),
    [dqsd_otel:end_span(dqsd_otel:start_span(<<"worker_1">>)) || _ <- lists:seq(1, Spans)],
    ok = sys:resume(dqsd_otel_exporter),
    T0 = erlang:monotonic_time(nanosecond),
    ok = dqsd_otel:flush(60000),
    T1 = erlang:monotonic_time(nanosecond),
    io:format("exporter: ~b items (spans + start events) per second over HTTP~n",
              [round(2 * Spans / ((T1 - T0) / 1.0e9))]).

%% The exporter's side: encoding one batch of 512 finished spans.
encode_cost() ->
    Resource = dqsd_otel_otlp:resource(<<"bench">>, #{}),
    Spans = [begin
                 Ctx = dqsd_otel:start_span(<<"worker_1">>, #{<<"k">> => 1}),
                 {Ctx, erlang:monotonic_time(nanosecond), ok}
             end || _ <- lists:seq(1, 512)],
    Offset = erlang:time_offset(nanosecond),
    Rounds = 200,
    T0 = erlang:monotonic_time(nanosecond),
    [iolist_to_binary(dqsd_otel_otlp:traces(Resource, Spans, Offset))
     || _ <- lists:seq(1, Rounds)],
    T1 = erlang:monotonic_time(nanosecond),
    io:format("exporter: JSON encoding ~.2f us per span (batches of 512)~n",
              [(T1 - T0) / 1000 / (Rounds * 512)]).

run(Label, F) ->
    _ = dqsd_otel:flush(),
    _ = time_calls(F, ?WARMUP, []),
    _ = dqsd_otel:flush(),
    #{dropped_spans := D0, dropped_events := E0} = dqsd_otel:stats(),
    Times = lists:sort(time_calls(F, ?CALLS, [])),
    #{dropped_spans := D1, dropped_events := E1} = dqsd_otel:stats(),
    Us = fun(Native) -> erlang:convert_time_unit(Native, native, nanosecond) / 1000 end,
    Median = Us(lists:nth(?CALLS div 2, Times)),
    P99 = Us(lists:nth(ceil(?CALLS * 0.99), Times)),
    Mean = Us(lists:sum(Times)) / ?CALLS,
    io:format("~-42ts ~10.2f ~10.2f ~10.2f ~8b~n",
              [Label, Median, P99, Mean, (D1 - D0) + (E1 - E0)]).

time_calls(_F, 0, Acc) ->
    Acc;
time_calls(F, N, Acc) ->
    T0 = erlang:monotonic_time(),
    F(),
    T1 = erlang:monotonic_time(),
    time_calls(F, N - 1, [T1 - T0 | Acc]).
