%% Copyright The deltaq-otel Authors
%% SPDX-License-Identifier: Apache-2.0

%% @doc A minimal HTTP/1.1 server on 127.0.0.1 standing in for a collector's
%% OTLP/HTTP receiver in tests and the benchmark.
%%
%% Every request is reported to the owner as
%% `{dqsd_http, N, Path, Headers, Body}' (N counts requests from 1, Headers
%% have lowercase binary names, a gzip body is already inflated) and answered
%% with the status the responder returns: `Responder(N, Path)' gives an HTTP
%% status code, `{Code, ExtraHeaders}', `{Code, ExtraHeaders, Body}' (the
%% body is otherwise `{}'), or `hang', which reports
%% `{dqsd_http_hang, N, Handler}' and answers 200 only when the handler
%% receives `release'. Connections are kept alive, as httpc expects.
-module(dqsd_otel_test_http).

-export([start/1, start/2, start/3, endpoint/1, stop/1]).

-type responder() :: fun((pos_integer(), binary()) ->
                            pos_integer() | {pos_integer(), [{string(), string()}]}
                            | {pos_integer(), [{string(), string()}], binary()} | hang).

-spec start(responder()) -> {ok, map()}.
start(Responder) ->
    start(Responder, self()).

%% @doc Starts a server reporting to `Owner'; returns a handle for
%% `endpoint/1' and `stop/1'.
-spec start(responder(), pid() | none) -> {ok, map()}.
start(Responder, Owner) ->
    start(Responder, Owner, {127, 0, 0, 1}).

%% @doc As `start/2', listening on the loopback address `Ip' (IPv4 or
%% IPv6); `{error, Why}' when it cannot listen there.
-spec start(responder(), pid() | none, inet:ip_address()) -> {ok, map()} | {error, term()}.
start(Responder, Owner, Ip) ->
    Parent = self(),
    Pid = spawn(fun() -> listen(Parent, Responder, Owner, Ip) end),
    receive
        {Pid, listening, Port} -> {ok, #{pid => Pid, port => Port, ip => Ip}};
        {Pid, cannot_listen, Why} -> {error, Why}
    after 5000 ->
        error(http_server_did_not_start)
    end.

%% @doc The base URL to configure as dqsd_otel's endpoint.
-spec endpoint(map()) -> string().
endpoint(#{port := Port, ip := {127, 0, 0, 1}}) ->
    "http://127.0.0.1:" ++ integer_to_list(Port);
endpoint(#{port := Port, ip := Ip}) ->
    "http://[" ++ inet:ntoa(Ip) ++ "]:" ++ integer_to_list(Port).

-spec stop(map()) -> ok.
stop(#{pid := Pid}) ->
    Ref = monitor(process, Pid),
    exit(Pid, kill),
    receive {'DOWN', Ref, process, Pid, _} -> ok end.

listen(Parent, Responder, Owner, Ip) ->
    case gen_tcp:listen(0, [binary, {ip, Ip}, {packet, http_bin}, {active, false},
                            {reuseaddr, true}]) of
        {ok, Listen} ->
            {ok, Port} = inet:port(Listen),
            Counter = atomics:new(1, []),
            Parent ! {self(), listening, Port},
            accept(Listen, Counter, Responder, Owner);
        {error, Why} ->
            Parent ! {self(), cannot_listen, Why}
    end.

accept(Listen, Counter, Responder, Owner) ->
    {ok, Socket} = gen_tcp:accept(Listen),
    Handler = spawn_link(fun() ->
                                 receive go -> ok end,
                                 connection(Socket, Counter, Responder, Owner)
                         end),
    ok = gen_tcp:controlling_process(Socket, Handler),
    Handler ! go,
    accept(Listen, Counter, Responder, Owner).

connection(Socket, Counter, Responder, Owner) ->
    case gen_tcp:recv(Socket, 0, 60000) of
        {ok, {http_request, _Method, {abs_path, Path}, _Version}} ->
            Headers = headers(Socket, []),
            Length = binary_to_integer(proplists:get_value(<<"content-length">>,
                                                           Headers, <<"0">>)),
            ok = inet:setopts(Socket, [{packet, raw}]),
            Raw = case Length of
                      0 -> <<>>;
                      _ -> {ok, B} = gen_tcp:recv(Socket, Length, 60000), B
                  end,
            ok = inet:setopts(Socket, [{packet, http_bin}]),
            Body = case proplists:get_value(<<"content-encoding">>, Headers) of
                       <<"gzip">> -> zlib:gunzip(Raw);
                       _ -> Raw
                   end,
            N = atomics:add_get(Counter, 1, 1),
            report(Owner, {dqsd_http, N, Path, Headers, Body}),
            {Code, Extra, Reply} = case Responder(N, Path) of
                                       hang ->
                                           report(Owner, {dqsd_http_hang, N, self()}),
                                           receive release -> {200, [], <<"{}">>} end;
                                       {C, H, Bytes} -> {C, H, Bytes};
                                       {C, H} -> {C, H, <<"{}">>};
                                       C when is_integer(C) -> {C, [], <<"{}">>}
                                   end,
            Response = [<<"HTTP/1.1 ">>, integer_to_binary(Code), <<" X\r\n">>,
                        [[K, <<": ">>, V, <<"\r\n">>] || {K, V} <- Extra],
                        <<"content-type: application/json\r\ncontent-length: ">>,
                        integer_to_binary(byte_size(Reply)), <<"\r\n\r\n">>, Reply],
            case gen_tcp:send(Socket, Response) of
                ok -> connection(Socket, Counter, Responder, Owner);
                {error, _} -> ok
            end;
        _ ->
            gen_tcp:close(Socket)
    end.

headers(Socket, Acc) ->
    case gen_tcp:recv(Socket, 0, 60000) of
        {ok, {http_header, _, Name, _, Value}} ->
            headers(Socket, [{lower(Name), Value} | Acc]);
        {ok, http_eoh} ->
            lists:reverse(Acc)
    end.

lower(Name) when is_atom(Name) -> string:lowercase(atom_to_binary(Name, utf8));
lower(Name) -> string:lowercase(Name).

report(none, _Msg) -> ok;
report(Owner, Msg) -> Owner ! Msg.
