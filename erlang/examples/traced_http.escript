#!/usr/bin/env escript
%% -*- erlang -*-
%% Copyright The deltaq-otel Authors
%% SPDX-License-Identifier: Apache-2.0
%%
%% An HTTP service (inets httpd, part of Erlang/OTP) whose handler continues
%% the caller's trace: it reads the W3C Trace Context of the request
%% (dqsd_otel:extract/1) and runs its span, `handle_work', as the child of
%% the caller's span. Whatever instrumented the caller (the OpenTelemetry Go
%% SDK, say), both spans are then one trace at the collector.
%%
%% GET /work runs `handle_work', whose child span `compute' sleeps
%% `--work-ms' (GET /work?ms=N: N ms). The response body has the handler's trace and span ids and
%% the trace context headers a request it made downstream would carry
%% (dqsd_otel:inject/2), e.g.
%%
%%   trace_id=0af7651916cd43dd8448eb211c80319c
%%   span_id=5c8a1c3e2f0b9d47
%%   traceparent: 00-0af7651916cd43dd8448eb211c80319c-5c8a1c3e2f0b9d47-01
%%   tracestate: congo=t61rcWkgMzE
%%
%% A request without a valid `traceparent' starts a new trace. Any other
%% path is answered 404.
%%
%% The service prints `traced_http: listening on http://127.0.0.1:PORT' once
%% it serves, and runs until its standard input is closed; then it has
%% dqsd_otel flush and exits.
%%
%% Usage (after `make -C erlang'):
%%   erlang/examples/traced_http.escript --endpoint http://localhost:4318 \
%%       [--port 8080] [--work-ms 20] [--service-name traced_http]
%%   curl -H 'traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' \
%%       http://127.0.0.1:8080/work
%% `--port 0' takes any free port.
-mode(compile).

-include_lib("inets/include/httpd.hrl").

%% The httpd callback module is this script.
-export([do/1]).

-define(OPTIONS, #{"endpoint" => "http://localhost:4318", "port" => "8080",
                   "work-ms" => "20", "service-name" => "traced_http"}).

main(Args) ->
    Opts = options(Args, ?OPTIONS),
    Port = number(Opts, "port"),
    persistent_term:put({?MODULE, work_ms}, number(Opts, "work-ms")),
    add_library_path(),
    ok = application:set_env(dqsd_otel, endpoint, maps:get("endpoint", Opts)),
    ok = application:set_env(dqsd_otel, service_name,
                             list_to_binary(maps:get("service-name", Opts))),
    {ok, _} = application:ensure_all_started(dqsd_otel),
    {ok, _} = application:ensure_all_started(inets),
    Root = filename:dirname(filename:absname(escript:script_name())),
    {ok, Httpd} = inets:start(httpd, [{port, Port}, {bind_address, {127, 0, 0, 1}},
                                      {server_name, "traced_http"}, {server_root, Root},
                                      {document_root, Root}, {modules, [?MODULE]}]),
    [{port, Bound}] = httpd:info(Httpd, [port]),
    io:format("traced_http: listening on http://127.0.0.1:~b~n", [Bound]),
    wait_for_eof(),
    ok = inets:stop(httpd, Httpd),
    Flush = dqsd_otel:flush(),
    io:format("traced_http: done, flush ~0p, stats ~0p~n", [Flush, dqsd_otel:stats()]),
    halt(0).

%% The httpd callback, run in the process of the request's connection
%% (which serves the connection's next requests too: with_span/4 leaves no
%% context behind in it).
do(#mod{method = "GET", request_uri = "/work" ++ Query, parsed_header = Headers}) ->
    case work_ms(Query) of
        {ok, WorkMs} -> work(Headers, WorkMs);
        error -> respond(400, "ms must be a whole number\n")
    end;
do(#mod{}) ->
    respond(404, "not found\n").

%% The time `compute' sleeps: N of `?ms=N', else `--work-ms'.
work_ms("?ms=" ++ N) ->
    case string:to_integer(N) of
        {Ms, ""} when Ms >= 0 -> {ok, Ms};
        _ -> error
    end;
work_ms(_) ->
    {ok, persistent_term:get({?MODULE, work_ms})}.

work(Headers, WorkMs) ->
    Parent = dqsd_otel:extract(Headers),
    Attributes = #{<<"http.request.method">> => <<"GET">>, <<"url.path">> => <<"/work">>},
    Body = dqsd_otel:with_span(<<"handle_work">>, Attributes, Parent, fun() ->
        dqsd_otel:with_span(<<"compute">>, fun() -> timer:sleep(WorkMs) end),
        Span = dqsd_otel:current_span(),
        Downstream = dqsd_otel:inject(Span, []),
        ["trace_id=", dqsd_otel:trace_id(Span), "\nspan_id=", dqsd_otel:span_id(Span), "\n",
         [[Name, ": ", Value, "\n"] || {Name, Value} <- Downstream]]
    end),
    respond(200, Body).

respond(Code, Body) ->
    Bin = iolist_to_binary(Body),
    Head = [{code, Code}, {content_type, "text/plain"},
            {content_length, integer_to_list(byte_size(Bin))}],
    {proceed, [{response, {response, Head, Bin}}]}.

wait_for_eof() ->
    case io:get_line("") of
        eof -> ok;
        {error, _} -> ok;
        _ -> wait_for_eof()
    end.

%% `--name value' or `--name=value' for each name of Defaults.
options([], Opts) ->
    Opts;
options(["--" ++ Arg | Rest], Opts) ->
    {Name, Value, Rest1} = case {string:split(Arg, "="), Rest} of
                               {[N, V], _} -> {N, V, Rest};
                               {[N], [V | R]} -> {N, V, R};
                               _ -> fail("missing value for --~s", [Arg])
                           end,
    maps:is_key(Name, ?OPTIONS) orelse fail("unknown option --~s", [Name]),
    options(Rest1, Opts#{Name := Value});
options([Arg | _], _) ->
    fail("unexpected argument ~s", [Arg]).

number(Opts, Name) ->
    case string:to_integer(maps:get(Name, Opts)) of
        {N, ""} when N >= 0 -> N;
        _ -> fail("--~s must be a whole number", [Name])
    end.

%% dqsd_otel's ebin: DQSD_OTEL_EBIN, else the one next to this example.
add_library_path() ->
    Here = filename:dirname(filename:absname(escript:script_name())),
    Ebin = os:getenv("DQSD_OTEL_EBIN", filename:join([Here, "..", "dqsd_otel", "ebin"])),
    filelib:is_file(filename:join(Ebin, "dqsd_otel.app"))
        orelse fail("dqsd_otel is not built in ~s (run make -C erlang)", [Ebin]),
    code:add_patha(Ebin).

fail(Format, Args) ->
    io:format(standard_error, "traced_http: " ++ Format ++ "~n", Args),
    halt(2).
