# frozen_string_literal: true

module Bench
  # Seeded stand-ins for the corpus documents, used only when no corpus folder exists
  # (a user's machine): the same kinds of content — many small objects with text
  # (twitter), wide objects of numbers and ids (citm_catalog), long arrays of floats
  # (canada) — so that the ratios mean roughly the same thing.
  module JsonShapes
    WORDS = %w[alpha beta gamma delta épsilon ζήτα 東京 ok \" \\ / tab\t line\n].freeze

    module_function

    def text(random, words = 8)
      Array.new(random.rand(1..words)) { WORDS[random.rand(WORDS.size)] }.join(" ")
    end

    def twitter(random, count = 100)
      statuses = Array.new(count) do |i|
        { "id" => 500_000_000_000 + i, "text" => text(random, 20), "truncated" => false,
          "user" => { "id" => random.rand(10**9), "name" => text(random, 2),
                      "followers_count" => random.rand(10**6), "verified" => random.rand(2).zero?,
                      "profile_image_url" => "http://a0.twimg.com/#{random.rand(10**6)}.png" },
          "entities" => { "hashtags" => [], "urls" => [], "user_mentions" => [] },
          "retweet_count" => random.rand(100), "favorited" => false, "geo" => nil }
      end
      { "statuses" => statuses, "search_metadata" => { "count" => count, "query" => "q" } }
    end

    def citm(random, count = 400)
      events = (1..count).to_h do |i|
        [(138_586_341 + i).to_s, { "id" => 138_586_341 + i, "name" => text(random, 4),
                                   "subTopicIds" => Array.new(3) { random.rand(10**8) },
                                   "topicIds" => [random.rand(10**8)], "logo" => nil,
                                   "description" => nil, "subjectCode" => nil }]
      end
      { "events" => events, "areaNames" => { "205705993" => "Arrière-scène central" } }
    end

    def canada(random, points = 20_000)
      ring = Array.new(points) { [random.rand(-141.0..-52.0), random.rand(41.0..84.0)] }
      { "type" => "FeatureCollection",
        "features" => [{ "type" => "Feature", "properties" => { "name" => "Canada" },
                         "geometry" => { "type" => "Polygon", "coordinates" => [ring] } }] }
    end

    # A generic document of about `size` top-level entries, for small/medium/large etc.
    def generic(random, size)
      Array.new(size) do |i|
        { "id" => i, "name" => text(random, 3), "score" => random.rand.round(6),
          "tags" => Array.new(random.rand(4)) { text(random, 1) }, "active" => i.even? }
      end
    end
  end
end
