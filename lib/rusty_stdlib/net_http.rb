# frozen_string_literal: true

require_relative "activation"
require_relative "method_swap"
require_relative "require_watch"

module RustyStdlib
  # Net::HTTP's message codec and URI's form codec on Rust, installed piece by piece:
  #
  # - :uri_form — URI.encode_www_form_component, encode_www_form,
  #   decode_www_form_component, decode_www_form;
  # - :header_names — Net::HTTPHeader#capitalize and #each_capitalized (canonical_each
  #   and request heads use capitalize);
  # - :response_head — Net::HTTPResponse.read_new, read_status_line and
  #   each_response_header: lines found in Net::BufferedIO's buffer and taken with its
  #   own rbuf_consume; a head that is all buffered parsed in one go (line by line,
  #   with the stdlib's reads, while set_debug_output logs or the head is incomplete);
  # - :request_head — Net::HTTPGenericRequest#write_header's request line and header
  #   block, for requests that do not override each_capitalized / capitalize;
  # - :chunked_body — Net::HTTPResponse#read_chunked: whole chunks straight from
  #   Net::BufferedIO's read buffer into a String body; the socket reads, the inflater,
  #   debug output and read_body's block stay the stdlib's, in the same order; and
  #   #read_body_0, which goes to read_chunked directly for an undecoded chunked body.
  #
  # Each piece is a module whose methods replace the stdlib's in the class or module that
  # defines them (MethodSwap: an app's own prepends, alias chains and redefinitions keep
  # working, before or after). They ask the native fast path first; that returns nil for
  # arguments it does not take (decided before anything observable happens), and the
  # stdlib's method, kept as a private __rusty_stdlib_stdlib_* alias, runs instead. A
  # piece is installed only on stdlib versions spec/net_http proves, and only where the
  # stdlib method is still the stdlib's own (nobody redefined it first).
  #
  # Lazy install: requiring this file loads neither net/http nor uri (about 30 ms of
  # boot). Pieces whose stdlib is already loaded go in at once; the rest go in when the
  # app requires net/http, net/https, uri or open-uri (lib/rusty_stdlib/require_watch.rb). RustyStdlib.status
  # reports :net_http :installed from the start when the versions the stdlib files on
  # the load path declare are proven (read from the files, not loaded), i.e. "installed
  # or installs on require"; NetHttp.pieces / piece_status tell what is in place now.
  #
  # The stdlib stays reachable: RustyStdlib::NetHttp.stdlib { ... } runs the block with
  # the stdlib's methods back in place of every installed piece (for specs and
  # comparisons; not thread-safe).
  module NetHttp
    # uri and net-http versions whose behaviour spec/net_http proves the pieces match, per
    # Ruby series (each Ruby's own).
    URI_PROVEN_BY_RUBY = { "3.1" => %w[0.11.0], "3.3" => %w[0.13.2], "3.4" => %w[1.0.4] }.freeze
    NET_HTTP_PROVEN_BY_RUBY = { "3.1" => %w[0.2.0], "3.3" => %w[0.4.1], "3.4" => %w[0.6.0] }.freeze
    # What each piece needs on this Ruby: constant => proven versions.
    net_http = { "Net::HTTP::VERSION" => RustyStdlib.proven_here(NET_HTTP_PROVEN_BY_RUBY) }.freeze
    PROVEN = {
      uri_form: { "URI::VERSION" => RustyStdlib.proven_here(URI_PROVEN_BY_RUBY) }.freeze,
      header_names: net_http, response_head: net_http, request_head: net_http, chunked_body: net_http,
    }.freeze

    # net-protocol versions whose Net::BufferedIO#rbuf_consume the native side repeats
    # in place (`@rbuf = ''.b` or `@rbuf.slice!(0, len)`; 0.2 keeps an offset instead).
    IN_PLACE_CONSUME = %w[0.1.2].freeze

    # The Ractor rusty_stdlib was loaded in. The native codec runs only there; in other
    # Ractors the response, request and body pieces hand every call to the stdlib's
    # method, which works there, or fails, as it does without us (Ruby 3.3's net-http
    # writes requests in any Ractor; reading a response fails on a non-shareable
    # constant). The form codec and header names are Ractor-safe (spec/net_http/ractor_spec.rb).
    MAIN_RACTOR = defined?(::Ractor) ? ::Ractor.current : nil

    # Whether the native codec may run in the current Ractor.
    def self.native_here?
      MAIN_RACTOR.nil? || ::Ractor.current.equal?(MAIN_RACTOR)
    end

    # URI's form codec (the stdlib's defaults, passed on to it as given or defaulted).
    module URIForm
      def encode_www_form_component(str, enc = nil)
        Native.encode_www_form_component(str, enc) || __rusty_stdlib_stdlib_encode_www_form_component(str, enc)
      end

      # The stdlib's calls encode_www_form_component for every key and value: only while
      # that is ours (not an app's replacement or wrapper) can the native code skip them.
      def encode_www_form(enum, enc = nil)
        (NetHttp.ours?(self, :encode_www_form_component) && Native.encode_www_form(enum, enc)) ||
          __rusty_stdlib_stdlib_encode_www_form(enum, enc)
      end

      def decode_www_form_component(str, enc = Encoding::UTF_8)
        Native.decode_www_form_component(str, enc) || __rusty_stdlib_stdlib_decode_www_form_component(str, enc)
      end

      def decode_www_form(str, enc = Encoding::UTF_8, separator: "&", use__charset_: false, isindex: false)
        (!use__charset_ && Native.decode_www_form(str, enc, separator, isindex)) ||
          __rusty_stdlib_stdlib_decode_www_form(str, enc, separator: separator, use__charset_: use__charset_,
                                                          isindex: isindex)
      end
    end

    # Net::HTTPHeader's header name canonicalisation: #capitalize (private) and
    # #each_capitalized, both defined by the native extension
    # (ext/rusty_stdlib/src/net_http/header.rs): capitalize answers exact ASCII Strings
    # itself, each_capitalized walks an exact Hash @header calling capitalize and
    # joining values as the stdlib does; everything else goes to the stdlib's method.
    module HeaderNames
    end

    # Net::HTTPResponse's status line and header parsing (private class methods).
    module ResponseHead
      # A socket whose only line is one already read, for handing it to the stdlib.
      OneLine = Struct.new(:readline)

      # What Native.read_new returns for a response it made but whose fields are left
      # to each_response_header.
      Unfinished = Struct.new(:response)

      # The stdlib's read_new. When the status line is in Net::BufferedIO's buffer (no
      # debug output logs it; the buffer is filled as readline would) and matches, and
      # `self` reaches our READERS, Native.read_new parses it there and makes the
      # response; when the whole head is in the buffer too and the response's
      # add_field, set_field and append_field_value are Net::HTTPHeader's, the fields
      # go into the new response's header Hash natively, as those methods would put
      # them, and status line and head are consumed at once. Otherwise each step is
      # the stdlib's.
      def read_new(sock) # :nodoc:
        return __rusty_stdlib_stdlib_read_new(sock) unless NetHttp.native_here?

        res = Native.read_new(self, sock, Net::HTTPHeader, Unfinished, ResponseHead)
        return res if res && !(Unfinished === res)

        if res
          # Made natively, its status line consumed.
          res = res.response
        else
          httpv, code, msg = read_status_line(sock)
          res = response_class(code).new(httpv, code, msg)
        end
        # The call sits where the stdlib's does, column and all: error_highlight quotes
        # the line in a NoMethodError's message (e.g. for a private add_field).
        each_response_header(sock) do |k,v|
        res.add_field k, v
        end
        res
      end

      private

      def read_status_line(sock)
        # Another kind of socket (or none, by mistake), or another Ractor: the stdlib's
        # method, whose errors quote its own line (error_highlight).
        unless ResponseHead.buffered_io?(sock) && NetHttp.native_here?
          return __rusty_stdlib_stdlib_read_status_line(sock)
        end

        str = ResponseHead.readline(sock)
        captures = Native.status_line(str)
        return captures if captures
        # Not binary: the stdlib's regexp.
        return __rusty_stdlib_stdlib_read_status_line(OneLine.new(str)) if captures.nil?

        raise Net::HTTPBadResponse, "wrong status line: #{str.dump}"
      end

      # `sock.readline` of a Net::BufferedIO; when the line is already in its buffer,
      # found natively and taken with the stdlib's own rbuf_consume (what readuntil does
      # then, without String#index's scan of the whole buffer).
      def self.readline(sock)
        n = Native.line_end(sock)
        n ? sock.__send__(:rbuf_consume, n).chop : sock.readline
      end

      # The stdlib's read_new calls these; the buffered path skips them, so only while
      # they are ours (not an app's replacements or wrappers).
      READERS = %i[read_status_line each_response_header].freeze

      # Whether `klass` (Net::HTTPResponse, or a subclass read_new was called on) reaches
      # our READERS, by asking for the methods: what Native.read_new calls where method
      # entries cannot tell (Ruby 3.3).
      def self.readers_ours?(klass)
        READERS.all? { |name| NetHttp.ours?(klass, name) }
      end

      # The stdlib's message for a header line without a colon, as it raises it: net-http
      # 0.2.0 (Ruby 3.1) has no frozen_string_literal, so a caller may append to it there.
      def self.header_format_error
        Net::HTTP::VERSION == "0.2.0" ? +"wrong header line format" : "wrong header line format"
      end

      # Whether `sock` is a Net::BufferedIO itself (not a subclass): asked without
      # calling a method of `sock` first, which any object (even a BasicObject) may lack.
      def self.buffered_io?(sock)
        Net::BufferedIO === sock && sock.instance_of?(Net::BufferedIO)
      end

      # The stdlib's loop. When the whole head is already in Net::BufferedIO's buffer
      # (and the stdlib would read it without raising, and no debug output logs each
      # line), it is taken apart natively in one go; each field is yielded with the
      # socket read as far as the stdlib has read it then (through the line after the
      # field), so a block that raises or breaks leaves it where the stdlib would.
      # Otherwise each binary line is taken apart natively; other lines (from a caller's
      # own socket object) go through the stdlib's own statements.
      def each_response_header(sock, &block)
        return __rusty_stdlib_stdlib_each_response_header(sock, &block) unless NetHttp.native_here?

        if ResponseHead.buffered_io?(sock) && (fields = Native.header_block(sock))
          taken = 0
          i = 1
          while i < fields.size
            read_to = fields[i + 2]
            sock.__send__(:rbuf_consume, read_to - taken)
            taken = read_to
            yield fields[i], fields[i + 1]
            i += 3
          end
          # A head without fields: its one line.
          sock.__send__(:rbuf_consume, fields[0]) if taken.zero?
          return
        end

        key = value = nil
        while true
          raw = sock.readuntil("\n", true)
          parsed = Native.header_line(raw)
          if parsed.nil?
            line = raw.sub(/\s+\z/, "")
            break if line.empty?

            # `or` and `and` bind equally: (space or tab) and value, as in the stdlib.
            if line[0] == " " or line[0] == "\t" and value
              value << " " unless value.empty?
              value << line.strip
            else
              yield key, value if key
              key, value = line.strip.split(/\s*:\s*/, 2)
              raise Net::HTTPBadResponse, ResponseHead.header_format_error if value.nil?
            end
            next
          end
          break unless parsed

          space, tab, stripped, name, field_value = parsed
          if space or tab and value
            value << " " unless value.empty?
            value << stripped
          else
            yield key, value if key
            key = name
            value = field_value
            raise Net::HTTPBadResponse, ResponseHead.header_format_error if value.nil?
          end
        end
        yield key, value if key
      end
    end

    # Net::HTTPGenericRequest#write_header.
    module RequestHead
      private

      def write_header(sock, ver, path)
        # Only into a Net::BufferedIO: a `sock` without `write` raises from the
        # stdlib's own line then.
        head = ResponseHead.buffered_io?(sock) && NetHttp.native_here? && RequestHead.stock?(self) &&
               Native.request_head(@method, path, ver, @header)
        return __rusty_stdlib_stdlib_write_header(sock, ver, path) unless head

        sock.write head
      end

      # Object#method (requests define their own #method, the HTTP verb).
      METHOD = ::Kernel.instance_method(:method)

      # Whether `request` builds its head with our each_capitalized / capitalize:
      # Net::HTTPHeader's, native (the stdlib's and anyone's redefinition are Ruby methods).
      def self.stock?(request)
        ours?(METHOD.bind_call(request, :each_capitalized)) && ours?(METHOD.bind_call(request, :capitalize))
      end

      def self.ours?(method)
        method.owner.equal?(Net::HTTPHeader) && method.source_location.nil?
      end
    end

    # Net::HTTPResponse#read_chunked (identical in net-http 0.2.0 and 0.4.1), item by
    # item: a chunk-size line, the chunk's data, its two trailing bytes, then trailer
    # lines up to an empty one. Native.chunked_scan takes every whole item already in
    # Net::BufferedIO's read buffer (appending the data to a plain String `dest`); the
    # item it stops at is read here with the stdlib's own calls, which fill the buffer,
    # log to set_debug_output and raise exactly as the stdlib's loop does. When the
    # scan cannot take anything (debug output on, read_body's block as `dest`) every
    # item goes through these calls, in the stdlib's order, so fragments and logs are
    # the stdlib's.
    module ChunkedBody
      # Phases (see ext/rusty_stdlib/src/net_http/chunked.rs); a positive phase is the
      # number of data bytes still to read.
      SIZE = -1
      CRLF = -2
      TRAILER = -3
      DONE = -4

      private

      # Net::HTTPResponse#read_body_0's plain case: no decoding asked for (so the
      # stdlib's inflater yields @socket itself) and a body chunked? finds chunked, told
      # natively where that runs none but the stdlib's own code (Ruby 3.1; see
      # ext/rusty_stdlib/src/net_http/body.rs): read_chunked straight away, as the
      # inflater's block does. Everything else: the stdlib's.
      def read_body_0(dest) # :nodoc:
        plain = NetHttp.native_here? && (!Net::HTTP::HAVE_ZLIB || !@decode_content) && Native.plain_chunked(self)
        return __rusty_stdlib_stdlib_read_body_0(dest) unless plain

        read_chunked dest, @socket
        nil
      end

      def read_chunked(dest, chunk_data_io) # :nodoc:
        sock = @socket
        # Through an inflater (gzip/deflate) or a socket of another class: the stdlib.
        unless chunk_data_io.equal?(sock) && ResponseHead.buffered_io?(sock) && NetHttp.native_here?
          return __rusty_stdlib_stdlib_read_chunked(dest, chunk_data_io)
        end

        phase = SIZE
        while (phase = Native.chunked_scan(sock, dest, phase)) != DONE
          case phase
          when SIZE
            line = sock.readline
            len = Native.chunk_size(line)
            if len.nil? # not a binary line, or a Bignum size: the stdlib's expressions
              hexlen = line.slice(/[0-9a-fA-F]+/) or
                raise Net::HTTPBadResponse, "wrong chunk size line: #{line}"
              len = hexlen.hex
            elsif !len
              raise Net::HTTPBadResponse, "wrong chunk size line: #{line}"
            end
            phase = len == 0 ? TRAILER : len
          when CRLF
            sock.read 2 # \r\n
            phase = SIZE
          when TRAILER
            phase = DONE if sock.readline.empty?
          else
            begin
              chunk_data_io.read phase, dest
            ensure
              sock.read 2 # \r\n
            end
            phase = SIZE
          end
        end
      end
    end

    # Where each piece goes: [piece, module of our methods, the class or module whose own
    # methods they replace, stdlib source file].
    SEAMS = [
      [:uri_form, URIForm, -> { URI.singleton_class }, "uri/common.rb"],
      [:header_names, HeaderNames, -> { Net::HTTPHeader }, "net/http/header.rb"],
      [:response_head, ResponseHead, -> { Net::HTTPResponse.singleton_class }, "net/http/response.rb"],
      [:request_head, RequestHead, -> { Net::HTTPGenericRequest }, "net/http/generic_request.rb"],
      [:chunked_body, ChunkedBody, -> { Net::HTTPResponse }, "net/http/response.rb"],
    ].freeze

    # What RequireWatch calls the pieces in after: a require of one of these, or any
    # outermost require.
    FEATURES = %w[net/http net/https uri open-uri].freeze

    @pieces = {}

    class << self
      # The pieces installed, in order.
      def pieces
        @pieces.keys
      end

      # Whether read_new tells stock add_field & co apart by their method entries (see
      # ext/rusty_stdlib/src/net_http/methods.rs; Ruby 3.1), which also catches a
      # redefinition in Net::HTTPHeader itself; elsewhere it compares owners.
      def stock_methods_known?
        @stock_methods_known == true
      end

      # Whether no piece is in yet, each waiting for its stdlib to be required
      # (RustyStdlib.status says :pending).
      def pending?
        @pieces.empty?
      end

      # Every piece's state: :installed, or why it is not.
      def piece_status
        SEAMS.to_h do |piece, mod, target, file|
          status = :installed if @pieces.key?(piece)
          status ||= (loaded?(piece) ? refusal(piece, mod, target.call, file) : waiting(piece))
          [piece, status || "not installed (module not activated)"]
        end
      end

      # nil when some piece can go in now or once its stdlib is required: before that,
      # the versions are read from the stdlib's source files (see #predicted_version).
      def unsupported_reason
        reasons = SEAMS.map do |piece, mod, target, file|
          loaded?(piece) ? refusal(piece, mod, target.call, file) : predicted_refusal(piece)
        end
        return nil if reasons.include?(nil)

        reasons.join("; ")
      end

      # Installs every piece whose stdlib is loaded and proven, and watches `require`
      # for the others (net/http and uri load lazily: requiring rusty_stdlib does not
      # load them, it only makes them native when the app requires them).
      # Swaps ours in now, or (json, net_http) once the app requires the library, unless
      # RustyStdlib.status gives a reason not to. Safe to call in any state; returns
      # whether ours is installed or pending.
      def install!
        RustyStdlib.send(:activate, :net_http, self)
      end

      # Puts the stdlib back (ours stays callable, as before install!). Safe to call in any
      # state; returns whether the stdlib is in place. If the app redefined a method of
      # ours since, nothing is undone: it warns which and returns false.
      def uninstall!
        RustyStdlib.send(:deactivate, :net_http, self)
      end

      # Called by RustyStdlib.activate once nothing stands in the way.
      def swap_in!
        SEAMS.each do |piece, mod, target_proc, file|
          next if @pieces.key?(piece) || !loaded?(piece)

          target = target_proc.call
          next if refusal(piece, mod, target, file)

          methods_of(mod).each { |name| MethodSwap.swap(target, name, mod) }
          @pieces[piece] = [mod, target]
        end
        remember_stock_methods
        watch_requires unless @pieces.size == SEAMS.size
      end
      private :swap_in!

      # Called by RustyStdlib.deactivate: nil once every piece's stdlib methods are back,
      # else why not. (The native side's remembered stock methods stay: only our swapped
      # methods consult them.)
      def swap_out!
        reason = MethodSwap.unswap(@pieces.values.map { |mod, target| [target, methods_of(mod)] })
        @pieces.clear unless reason
        reason
      end
      private :swap_out!

      # Called by RequireWatch after a require returned (see FEATURES).
      def call
        return if @pieces.size == SEAMS.size || !RustyStdlib.send(:activated?, :net_http)

        swap_in! if SEAMS.any? { |piece, *| !@pieces.key?(piece) && loaded?(piece) }
      end

      # Runs the block with the stdlib's own methods in place of every installed piece.
      def stdlib(&block)
        MethodSwap.with_stdlib(@pieces.values.map { |mod, target| [target, methods_of(mod)] }, &block)
      end

      # Whether the method `name` that `receiver` reaches is one of ours from this file
      # (not an app's replacement or wrapper), asked by asking for the method: a fast path
      # that skips a call the stdlib makes takes it only then. Works in any Ractor.
      def ours?(receiver, name)
        receiver.method(name).source_location&.first == __FILE__
      end

      private

      # Tells the native side which add_field, set_field and append_field_value (for
      # read_new) and inflater, chunked?, [] and read_chunked (for read_body_0) are the
      # stock ones (the stdlib's from its files, and ours), so that it can see cheaply
      # whether a response still reaches them (ext/rusty_stdlib/src/net_http/methods.rs);
      # and, for each_capitalized, whether a request's capitalize is still ours. Once,
      # when net/http is loaded.
      def remember_stock_methods
        return if @remembered || !loaded?(:response_head)

        @remembered = true
        probe = Class.new { include Net::HTTPHeader }
        fields = %i[add_field set_field append_field_value]
        stock = fields.all? do |name|
          method = probe.instance_method(name)
          method.owner == Net::HTTPHeader && method.source_location&.first.to_s.end_with?("/net/http/header.rb")
        end
        @stock_methods_known = stock && Native.remember_stock(probe, fields)
        # each_capitalized makes the names itself, without calling capitalize, while the
        # capitalize a request reaches is this one of ours (not a subclass's, a
        # singleton's, a prepended module's or a later redefinition).
        if @pieces.key?(:header_names) && RequestHead.ours?(probe.instance_method(:capitalize))
          Native.remember_stock(probe, [:capitalize])
        end
        body = { inflater: [Net::HTTPResponse, "/net/http/response.rb"],
                 chunked?: [Net::HTTPHeader, "/net/http/header.rb"],
                 "[]": [Net::HTTPHeader, "/net/http/header.rb"],
                 read_chunked: [Net::HTTPResponse, __FILE__] } # ours, swapped in
        body_stock = body.all? do |name, (owner, file)|
          method = Net::HTTPResponse.instance_method(name)
          method.owner == owner && method.source_location&.first.to_s.end_with?(file)
        end
        Native.remember_stock(Net::HTTPResponse, body.keys) if body_stock
        Native.remember_stock(Net::HTTPResponse.singleton_class, ResponseHead::READERS) if @pieces.key?(:response_head)
        # The native side consumes Net::BufferedIO's buffer in place, as rbuf_consume
        # does, while rbuf_consume is net-protocol's own of a version proven here.
        consume = Net::BufferedIO.instance_method(:rbuf_consume)
        if IN_PLACE_CONSUME.include?(Net::Protocol::VERSION) && consume.owner == Net::BufferedIO &&
           consume.source_location&.first.to_s.end_with?("/net/protocol.rb")
          Native.remember_stock(Net::BufferedIO, [:rbuf_consume])
        end
      end

      def watch_requires
        RequireWatch.watch(FEATURES, self)
      end

      # Whether the stdlib the piece replaces is loaded (completely: a piece is looked
      # at only outside the require that loads it, see RequireWatch).
      def loaded?(piece)
        piece == :uri_form ? defined?(::URI::VERSION) && defined?(::URI.decode_www_form) : defined?(::Net::HTTP::VERSION) && defined?(::Net::HTTPResponse)
      end

      def waiting(piece)
        "waiting for #{piece == :uri_form ? 'uri' : 'net/http'} to be required"
      end

      # Why `piece` will not go in when its stdlib gets required, from the version its
      # source file on the load path states; nil when that version is proven.
      def predicted_refusal(piece)
        PROVEN.fetch(piece).each do |constant, versions|
          version = predicted_version(constant)
          return "#{constant} #{version.inspect} (read from its source) is not proven for #{piece} #{RustyStdlib.proven_note(versions)}" unless versions.include?(version)
        end
        nil
      end

      # The version the stdlib file that `require` would load defines, read from the
      # file (net/http.rb's `VERSION = "x.y.z"`, uri/version.rb's VERSION_CODE), or nil.
      def predicted_version(constant)
        feature, pattern = constant == "URI::VERSION" ? ["uri/version", /VERSION_CODE = '(\d+)'/] : ["net/http", /^\s*VERSION = "([^"]+)"/]
        type, path = $LOAD_PATH.resolve_feature_path(feature)
        return nil unless type == :rb

        found = File.read(path)[pattern, 1]
        feature == "uri/version" && found ? found.scan(/../).map(&:to_i).join(".") : found
      rescue LoadError, SystemCallError
        nil
      end

      # Why `piece` cannot go in, or nil.
      def refusal(piece, mod, target, file)
        PROVEN.fetch(piece).each do |constant, versions|
          version = Object.const_get(constant)
          return "#{constant} #{version} is not proven for #{piece} #{RustyStdlib.proven_note(versions)}" unless versions.include?(version)
        end
        return nil if @pieces[piece]&.last.equal?(target)

        methods_of(mod).each do |name|
          unless target.method_defined?(name) || target.private_method_defined?(name)
            return "#{target}##{name} is not the stdlib's (not defined)"
          end
          next if MethodSwap.stock?(target, name, "/#{file}")

          method = MethodSwap.own_method(target, name)
          return "#{target}##{name} is not the stdlib's (#{method.owner}, #{method.source_location&.first})"
        end
        nil
      end

      # The methods a piece module replaces: all its own, public or private.
      def methods_of(mod)
        mod.instance_methods(false) + mod.private_instance_methods(false)
      end
    end
  end
end

RustyStdlib::NetHttp.install!
