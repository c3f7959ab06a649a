#!/usr/bin/env escript
%% -*- erlang -*-
%%
%% The M/M/1/K two-worker system of the thesis (chapter 6.1), instrumented
%% with dqsd_otel and exporting OTLP to a collector.
%%
%% Jobs arrive as a Poisson process at `--rate' per second. Each passes
%% through two stations, worker_1 then worker_2; a station is a buffer of
%% size K (the job in service included) and a worker whose service time is
%% exponential with mean `--service-ms'. A job arriving at a full buffer is
%% dropped, and the drop is a failure of that station's outcome and of the
%% end-to-end one.
%%
%% Probes (span names, which are also the probes' names):
%%   worker_1    from arrival at worker_1's buffer to the end of its service
%%   worker_2    from arrival at worker_2's buffer to the end of its service
%%   end_to_end  from arrival to the end of worker_2's service, the parent of
%%               the other two; its outcome diagram is
%%               end_to_end = worker_1 -> worker_2 (see mm1k.dq)
%%
%% The example runs for `--duration' seconds, waits for jobs in flight, has
%% dqsd_otel flush and exits. It keeps running, and exits normally, when the
%% collector is slow or gone: export failures are counted, not raised.
%%
%% Usage (after `make -C erlang'):
%%   erlang/examples/mm1k.escript --endpoint http://localhost:4318 \
%%       --rate 50 --duration 30 [--k 10] [--service-ms 8] [--seed 1]
%%       [--service-name mm1k] [--batch-size N]
%% `--batch-size' sets dqsd_otel's batch_size (its default otherwise).
-mode(compile).

-define(DEFAULTS, #{endpoint => "http://localhost:4318", rate => 50.0,
                    duration => 30.0, k => 10, service_ms => 8.0, seed => undefined,
                    service_name => "mm1k", drain_s => 10.0, batch_size => undefined}).

main(Args) ->
    Opts = parse(Args, ?DEFAULTS),
    load_library(),
    #{endpoint := Endpoint, rate := Rate, duration := Duration, k := K,
      service_ms := ServiceMs, service_name := ServiceName} = Opts,
    Seed = case maps:get(seed, Opts) of
               undefined -> erlang:system_time() band 16#ffffffff;
               S -> S
           end,
    ok = application:set_env(dqsd_otel, endpoint, Endpoint),
    ok = application:set_env(dqsd_otel, service_name, list_to_binary(ServiceName)),
    case maps:get(batch_size, Opts) of
        undefined -> ok;
        Batch -> ok = application:set_env(dqsd_otel, batch_size, Batch)
    end,
    {ok, _} = application:ensure_all_started(dqsd_otel),
    io:format("mm1k: rate=~g/s duration=~gs K=~b service=~gms seed=~b endpoint=~s~n",
              [Rate, Duration, K, ServiceMs, Seed, Endpoint]),
    theory(Rate, ServiceMs, K),
    Counts = atomics:new(4, []),
    Sink = fun(Job) -> complete(Job, Counts) end,
    W2 = station(<<"worker_2">>, 2, K, ServiceMs, Seed + 2, Sink, Counts),
    W1 = station(<<"worker_1">>, 1, K, ServiceMs, Seed + 1,
                 fun(Job) -> next_station(Job, W2) end, Counts),
    rand:seed(exsss, Seed),
    Start = erlang:monotonic_time(microsecond),
    End = Start + round(Duration * 1.0e6),
    generate(W1, Rate, Start, End, Start + 5000000, Counts),
    drain(Counts, erlang:monotonic_time(millisecond) + round(maps:get(drain_s, Opts) * 1000)),
    Flush = dqsd_otel:flush(),
    report("done", Counts),
    io:format("mm1k: flush ~0p~n", [Flush]),
    halt(0).

%%--------------------------------------------------------------------
%% Arrivals

%% Poisson arrivals: exponential gaps at Rate per second, on an absolute
%% schedule so that late wake-ups do not lower the rate.
generate(_W1, _Rate, At, End, _Report, _Counts) when At >= End ->
    ok;
generate(W1, Rate, At, End, Report, Counts) ->
    wait_until(At),
    arrive(W1, Counts),
    Next = At + round(exponential(1.0e6 / Rate)),
    case Next >= Report of
        true ->
            report("running", Counts),
            generate(W1, Rate, Next, End, Report + 5000000, Counts);
        false ->
            generate(W1, Rate, Next, End, Report, Counts)
    end.

arrive(W1, Counts) ->
    atomics:add(Counts, 1, 1),
    EndToEnd = dqsd_otel:start_span(<<"end_to_end">>),
    _ = dqsd_otel:set_current_span(EndToEnd),
    Span = dqsd_otel:start_span(<<"worker_1">>),
    _ = dqsd_otel:set_current_span(undefined),
    W1 ! {arrive, #{end_to_end => EndToEnd, span => Span}}.

%% worker_1 is done: its span ends and the job's worker_2 span starts, a
%% child of the end-to-end span passed along with the job.
next_station(#{end_to_end := EndToEnd, span := Span} = Job, W2) ->
    ok = dqsd_otel:end_span(Span),
    _ = dqsd_otel:set_current_span(EndToEnd),
    Next = dqsd_otel:start_span(<<"worker_2">>),
    _ = dqsd_otel:set_current_span(undefined),
    W2 ! {arrive, Job#{span := Next}}.

complete(#{end_to_end := EndToEnd, span := Span}, Counts) ->
    ok = dqsd_otel:end_span(Span),
    ok = dqsd_otel:end_span(EndToEnd),
    atomics:add(Counts, 2, 1).

%%--------------------------------------------------------------------
%% A station: a buffer of K places (the job in service included) and a
%% worker. A job finding the buffer full fails.

station(Name, Index, K, ServiceMs, Seed, Done, Counts) ->
    Buffer = self_spawn(fun(Self) ->
        Worker = spawn_link(fun() ->
            rand:seed(exsss, Seed),
            serve(Self, ServiceMs, Done)
        end),
        buffer(#{name => Name, index => Index, k => K, worker => Worker,
                 queue => queue:new(), in_system => 0, counts => Counts})
    end),
    Buffer.

self_spawn(F) ->
    spawn_link(fun() -> F(self()) end).

buffer(#{k := K, in_system := N, worker := Worker, queue := Q} = S) ->
    receive
        {arrive, Job} when N >= K ->
            reject(Job, S),
            buffer(S);
        {arrive, Job} when N =:= 0 ->
            Worker ! {serve, Job},
            buffer(S#{in_system := 1});
        {arrive, Job} ->
            buffer(S#{in_system := N + 1, queue := queue:in(Job, Q)});
        {done, Worker} ->
            case queue:out(Q) of
                {{value, Next}, Q1} ->
                    Worker ! {serve, Next},
                    buffer(S#{in_system := N - 1, queue := Q1});
                {empty, _} ->
                    buffer(S#{in_system := N - 1})
            end
    end.

reject(#{end_to_end := EndToEnd, span := Span},
       #{name := Name, index := Index, counts := Counts}) ->
    Reason = <<Name/binary, " queue full">>,
    ok = dqsd_otel:fail_span(Span, Reason),
    ok = dqsd_otel:fail_span(EndToEnd, Reason),
    atomics:add(Counts, 2 + Index, 1).

serve(Buffer, ServiceMs, Done) ->
    receive
        {serve, Job} ->
            wait_until(erlang:monotonic_time(microsecond)
                       + round(exponential(ServiceMs * 1000))),
            Done(Job),
            Buffer ! {done, self()},
            serve(Buffer, ServiceMs, Done)
    end.

%%--------------------------------------------------------------------
%% Time

exponential(Mean) ->
    -Mean * math:log(1.0 - rand:uniform()).

%% Waits until a monotonic time in µs: Erlang timers have millisecond
%% resolution, so sleep to within a millisecond, then spin.
wait_until(At) ->
    case At - erlang:monotonic_time(microsecond) of
        Left when Left > 2000 ->
            receive after (Left div 1000) - 1 -> ok end,
            wait_until(At);
        Left when Left > 0 ->
            erlang:yield(),
            wait_until(At);
        _ ->
            ok
    end.

%% Waits for the jobs in flight, at most until Deadline (ms).
drain(Counts, Deadline) ->
    [Arrived, Completed, Failed1, Failed2] = [atomics:get(Counts, I) || I <- [1, 2, 3, 4]],
    case Arrived - Completed - Failed1 - Failed2 of
        0 -> ok;
        _ ->
            case erlang:monotonic_time(millisecond) < Deadline of
                true -> timer:sleep(10), drain(Counts, Deadline);
                false -> ok
            end
    end.

%%--------------------------------------------------------------------
%% Output

report(What, Counts) ->
    [Arrived, Completed, Failed1, Failed2] = [atomics:get(Counts, I) || I <- [1, 2, 3, 4]],
    Stats = dqsd_otel:stats(),
    io:format("mm1k: ~s arrivals=~b completed=~b failed_worker_1=~b failed_worker_2=~b "
              "in_flight=~b exported_spans=~b exported_events=~b elided_events=~b "
              "dropped=~b export_failed=~b~n",
              [What, Arrived, Completed, Failed1, Failed2,
               Arrived - Completed - Failed1 - Failed2,
               maps:get(exported_spans, Stats, 0), maps:get(exported_events, Stats, 0),
               maps:get(elided_events, Stats, 0),
               maps:get(dropped_spans, Stats, 0) + maps:get(dropped_events, Stats, 0),
               maps:get(failed_spans, Stats, 0) + maps:get(failed_events, Stats, 0)]).

%% M/M/1/K closed forms for worker_1 (Kleinrock, Queueing Systems vol. 1,
%% 3.6): with ρ = λ/μ, P(n) = (1−ρ)ρⁿ/(1−ρ^(K+1)); the blocking probability
%% is P(K), and by Little's law the mean time in the station of an admitted
%% job is L/(λ(1−P(K))) with L = Σ n·P(n).
theory(Rate, ServiceMs, K) ->
    Rho = Rate * ServiceMs / 1000,
    P = fun(_N) when Rho == 1.0 -> 1 / (K + 1);
           (N) -> (1 - Rho) * math:pow(Rho, N) / (1 - math:pow(Rho, K + 1))
        end,
    L = lists:sum([N * P(N) || N <- lists:seq(0, K)]),
    Block = P(K),
    W = L / (Rate * (1 - Block)) * 1000,
    io:format("mm1k: worker_1 theory rho=~.3f blocking=~.4f mean_sojourn=~.2fms~n",
              [Rho, Block, W]).

%%--------------------------------------------------------------------
%% Command line and library path

parse([], Opts) ->
    Opts;
parse(["--" ++ Flag | Rest], Opts) ->
    {Name, Value, Rest1} =
        case string:split(Flag, "=") of
            [N, V] -> {N, V, Rest};
            [N] when Rest =/= [] -> {N, hd(Rest), tl(Rest)};
            _ -> usage("missing value for --" ++ Flag)
        end,
    parse(Rest1, option(Name, Value, Opts));
parse([Arg | _], _) ->
    usage("unexpected argument " ++ Arg).

option("endpoint", V, Opts) -> Opts#{endpoint := V};
option("service-name", V, Opts) -> Opts#{service_name := V};
option("rate", V, Opts) -> Opts#{rate := positive(number(V, "rate"), "rate")};
option("duration", V, Opts) -> Opts#{duration := positive(number(V, "duration"), "duration")};
option("service-ms", V, Opts) -> Opts#{service_ms := positive(number(V, "service-ms"), "service-ms")};
option("drain-s", V, Opts) -> Opts#{drain_s := number(V, "drain-s")};
option("k", V, Opts) -> Opts#{k := positive(integer(V, "k"), "k")};
option("batch-size", V, Opts) -> Opts#{batch_size := positive(integer(V, "batch-size"), "batch-size")};
option("seed", V, Opts) -> Opts#{seed := integer(V, "seed")};
option(Name, _, _) -> usage("unknown option --" ++ Name).

number(S, Name) ->
    case string:to_float(S) of
        {F, ""} -> F;
        _ -> float(integer(S, Name))
    end.

integer(S, Name) ->
    case string:to_integer(S) of
        {I, ""} -> I;
        _ -> usage("--" ++ Name ++ " must be a number, got " ++ S)
    end.

positive(X, _) when X > 0 -> X;
positive(_, Name) -> usage("--" ++ Name ++ " must be positive").

usage(Why) ->
    io:format(standard_error,
              "mm1k: ~s~nusage: mm1k.escript [--endpoint URL] [--rate PER_S] "
              "[--duration S] [--k K] [--service-ms MS] [--seed N] "
              "[--service-name NAME] [--drain-s S] [--batch-size N]~n", [Why]),
    halt(2).

%% The library's ebin: DQSD_OTEL_EBIN, or the one `make -C erlang' builds
%% next to this script.
load_library() ->
    Ebin = case os:getenv("DQSD_OTEL_EBIN") of
               false ->
                   Here = filename:dirname(filename:absname(escript:script_name())),
                   filename:join([Here, "..", "dqsd_otel", "ebin"]);
               Dir ->
                   Dir
           end,
    case filelib:is_file(filename:join(Ebin, "dqsd_otel.app")) of
        true ->
            true = code:add_patha(Ebin);
        false ->
            io:format(standard_error, "mm1k: dqsd_otel is not built in ~s "
                      "(run make -C erlang)~n", [Ebin]),
            halt(1)
    end.
